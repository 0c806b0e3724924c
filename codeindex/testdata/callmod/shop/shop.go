// Package shop is the call-graph fixture: its calls are known by line.
package shop

// Pricer prices an item.
type Pricer interface {
	Price(item string) int
}

// Flat prices everything the same.
type Flat struct{ Amount int }

// Price returns the flat amount.
func (f Flat) Price(item string) int { return f.Amount }

// Sale halves another pricer.
type Sale struct{ Base Pricer }

// Price returns half the base price.
func (s *Sale) Price(item string) int { return s.Base.Price(item) / 2 }

// Total sums the prices of items.
func Total(p Pricer, items []string) int {
	sum := 0
	for _, it := range items {
		sum += p.Price(it)
	}
	return sum
}

// Checkout totals a cart with a closure.
func Checkout(items []string) int {
	apply := func() int {
		return Total(&Sale{Base: Flat{Amount: 10}}, items)
	}
	return apply() + tax(items)
}

func tax(items []string) int { return len(items) }

// Receipt prints nothing but totals twice.
func Receipt(items []string) int {
	return Total(Flat{Amount: 1}, items) + tax(items)
}
