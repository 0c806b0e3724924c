import sys

price = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
discount = 0.2
final = price * (1 - discount / 100)
print(f"{final:.2f}")
