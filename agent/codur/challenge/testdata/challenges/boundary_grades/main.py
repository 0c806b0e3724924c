import sys


def grade(score):
    if score > 90:
        return "A"
    if score > 80:
        return "B"
    return "C"


for s in [int(a) for a in sys.argv[1:]] or [95, 90, 85, 80, 70]:
    print(s, grade(s))
