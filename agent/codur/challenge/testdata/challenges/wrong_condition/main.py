import sys


def is_even(n):
    return n % 2 == 1


print([n for n in range(int(sys.argv[1]) if len(sys.argv) > 1 else 6) if is_even(n)])
