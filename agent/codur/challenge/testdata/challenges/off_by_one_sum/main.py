import sys


def total(n):
    s = 0
    for i in range(1, n):
        s += i
    return s


print(total(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
