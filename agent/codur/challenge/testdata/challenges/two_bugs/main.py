import sys


def total_with_tax(n, tax):
    subtotal = sum(range(1, n))
    return subtotal * (1 + tax / 100)


print(round(total_with_tax(int(sys.argv[1]) if len(sys.argv) > 1 else 4, 0.5), 2))
