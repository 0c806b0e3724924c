"""Small numeric helpers."""

import math

PRECISION = 3


def clamp(value, low, high):
    """Limit value to [low, high]."""
    return max(low, min(value, high))


def rounded(value):
    """Round value to PRECISION digits."""
    return round(value, PRECISION)


# A comment right above a definition belongs to its chunk.
def hypot(a, b):
    return math.sqrt(a * a + b * b)
