import sys

values = [int(a) for a in sys.argv[1:]] or [3, -1, 4, -1, 5]
count = 0
total = 0
for v in values:
    if v < 0: continue
    count += 1
    total += v
print(f"count={count} total={total}")
