def grade(score):
    if score > 90:
        return "A"
    if score > 80:
        return "B"
    return "C"


for s in [95, 90, 85, 80, 70]:
    print(s, grade(s))
