// Package shop prices shopping carts.
package shop

// Item is one line of a cart: a unit price in cents and a quantity.
type Item struct {
	Name     string
	Price    int
	Quantity int
}

// Total returns the price of the cart in cents: each item's unit price
// times its quantity, summed.
func Total(items []Item) int {
	total := 0
	for i := 1; i < len(items); i++ {
		total += items[i].Price * items[i].Quantity
	}
	return total
}
