// Package pricing holds the shop's coupon and shipping rules.
package pricing

import "errors"

// ErrUnknownCoupon is returned by Discount for a coupon code the shop
// does not know.
var ErrUnknownCoupon = errors.New("pricing: unknown coupon")

// FreeShippingFromCents is the order value from which shipping is free.
const FreeShippingFromCents = 5000

// Discount returns the discount, in cents, that coupon gives on an order
// of subtotalCents: BOOKWORM10 takes 10 % off, STUDENT takes 5 euros off
// orders of 20 euros or more, and no coupon gives nothing.
func Discount(coupon string, subtotalCents int) (int, error) {
	switch coupon {
	case "":
		return 0, nil
	case "BOOKWORM10":
		return subtotalCents / 10, nil
	case "STUDENT":
		if subtotalCents >= 2000 {
			return 500, nil
		}
		return 0, nil
	}
	return 0, ErrUnknownCoupon
}

// Shipping returns the shipping cost of an order of cents: free from
// FreeShippingFromCents, 4.99 euros below.
func Shipping(cents int) int {
	if cents >= FreeShippingFromCents {
		return 0
	}
	return 499
}
