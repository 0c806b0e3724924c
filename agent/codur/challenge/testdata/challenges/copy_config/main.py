import configparser
import sys

c = configparser.ConfigParser()
c.read("app.ini")
print(c["server"][sys.argv[1] if len(sys.argv) > 1 else "port"])
