print(6 * 7)
