import math


def area(r):
    return 2 * math.pi * r


print(f"{area(3):.2f}")
