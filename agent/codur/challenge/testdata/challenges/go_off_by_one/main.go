package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	xs := []int{1, 2, 3, 4}
	if len(os.Args) > 1 {
		xs = xs[:0]
		for _, a := range os.Args[1:] {
			n, _ := strconv.Atoi(a)
			xs = append(xs, n)
		}
	}
	sum := 0
	for i := 0; i < len(xs)-1; i++ {
		sum += xs[i]
	}
	fmt.Println(sum)
}
