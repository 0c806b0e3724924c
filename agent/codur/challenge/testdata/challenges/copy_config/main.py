import configparser

c = configparser.ConfigParser()
c.read("app.ini")
print(c["server"]["port"])
