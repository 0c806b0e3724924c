"""Command-line entry point."""

import sys

from geom import Circle, Square, clamp


def main(argv):
    n = clamp(int(argv[1]), 1, 10)
    shapes = [Circle(n), Square(n)]
    for s in shapes:
        print(s.describe())
    helper = lambda x: clamp(x, 0, 1)
    return helper(n)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
