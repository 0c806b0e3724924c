with open("numbers.txt") as f:
    print(sum(int(line) for line in f if line.strip()))
