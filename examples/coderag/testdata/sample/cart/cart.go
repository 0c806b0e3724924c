// Package cart keeps a shopper's cart of books and prices it at checkout.
package cart

import "example.com/bookshop/pricing"

// Item is a line of a cart: a book and how many copies of it.
type Item struct {
	ISBN       string
	Title      string
	PriceCents int
	Quantity   int
}

// Cart is a shopper's cart: its items and the coupon code entered, if any.
type Cart struct {
	Items  []Item
	Coupon string
}

// Add puts it in the cart, or adds its quantity to the line of the same
// ISBN.
func (c *Cart) Add(it Item) {
	for i := range c.Items {
		if c.Items[i].ISBN == it.ISBN {
			c.Items[i].Quantity += it.Quantity
			return
		}
	}
	c.Items = append(c.Items, it)
}

// Subtotal is the price of items before any discount, in cents.
func Subtotal(items []Item) int {
	total := 0
	for _, it := range items {
		total += it.PriceCents * it.Quantity
	}
	return total
}

// Checkout prices the cart: the subtotal, less the discount of the
// cart's coupon, plus shipping on the discounted amount. An unknown coupon
// fails the checkout.
func Checkout(c *Cart) (totalCents int, err error) {
	sub := Subtotal(c.Items)
	discount, err := pricing.Discount(c.Coupon, sub)
	if err != nil {
		return 0, err
	}
	net := sub - discount
	return net + pricing.Shipping(net), nil
}
