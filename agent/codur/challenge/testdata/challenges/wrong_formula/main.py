import math
import sys


def area(r):
    return 2 * math.pi * r


print(f"{area(float(sys.argv[1]) if len(sys.argv) > 1 else 3):.2f}")
