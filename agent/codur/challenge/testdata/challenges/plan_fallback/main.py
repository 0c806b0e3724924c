import sys


def reverse(s):
    return s[::1]


print(reverse(sys.argv[1] if len(sys.argv) > 1 else "stressed"))
