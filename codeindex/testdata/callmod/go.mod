module example.com/callmod

go 1.26
