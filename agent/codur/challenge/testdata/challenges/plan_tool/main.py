print("Hello, Wrld")
