name = "Ada"
print("Hello, {name}!")
