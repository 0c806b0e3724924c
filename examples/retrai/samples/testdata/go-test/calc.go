// Package calc does small sums.
package calc

// SumRange returns the sum of the integers from a to b, both included. It
// returns 0 when a > b.
func SumRange(a, b int) int {
	total := 0
	for i := a; i < b; i++ {
		total += i
	}
	return total
}
