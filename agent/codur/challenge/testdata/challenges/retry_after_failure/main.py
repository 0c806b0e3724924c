import sys


def to_f(c):
    return c * 9 / 5 - 32


for c in [float(a) for a in sys.argv[1:]] or [0, 100, 37]:
    print(f"{to_f(c):.1f}")
