def to_f(c):
    return c * 9 / 5 - 32


for c in [0, 100, 37]:
    print(f"{to_f(c):.1f}")
