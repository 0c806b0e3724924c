import sys


def greet(name):
    return "Helo, " + name


print(greet(sys.argv[1] if len(sys.argv) > 1 else "World"))
