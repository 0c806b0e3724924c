def total(n):
    s = 0
    for i in range(1, n):
        s += i
    return s


print(total(10))
