"""Shapes with areas."""

import functools

from geom.util import clamp, rounded


def registered(cls):
    """Class decorator that records cls."""
    REGISTRY.append(cls)
    return cls


REGISTRY = []


@registered
class Circle:
    """A circle of a given radius."""

    sides = 0

    def __init__(self, radius):
        self.radius = clamp(radius, 0, 100)

    @property
    def area(self):
        """The area, rounded."""
        return rounded(3.14159 * self.radius ** 2)

    def describe(self):
        return "circle of area %s" % self.area


class Square:
    def __init__(self, side):
        self.side = clamp(side, 0, 100)

    @functools.lru_cache(maxsize=None)
    def area(self):
        return rounded(self.side * self.side)

    def describe(self):
        return "square of area %s" % self.area()

    def scaled(self, k):
        return Square(self.side * k)


def total_area(shapes):
    return sum(s.area() for s in shapes)
