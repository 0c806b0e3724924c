import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
for i in range(1, n + 1):
    if i % 3 == 0:
        print("Fizz")
    elif i % 5 == 0:
        print("Buzz")
    else:
        print(i)
