import sys

a, b = (int(x) for x in sys.argv[1:3]) if len(sys.argv) > 2 else (6, 7)
print(a * b)
