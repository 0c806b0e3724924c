def is_even(n):
    return n % 2 == 1


print([n for n in range(6) if is_even(n)])
