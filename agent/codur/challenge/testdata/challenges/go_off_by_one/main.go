package main

import "fmt"

func main() {
	xs := []int{1, 2, 3, 4}
	sum := 0
	for i := 0; i < len(xs)-1; i++ {
		sum += xs[i]
	}
	fmt.Println(sum)
}
