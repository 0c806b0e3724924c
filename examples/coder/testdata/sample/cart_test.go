package shop

import "testing"

func TestTotal(t *testing.T) {
	items := []Item{
		{Name: "tea", Price: 350, Quantity: 2},
		{Name: "cake", Price: 420, Quantity: 1},
	}
	if got, want := Total(items), 1120; got != want {
		t.Fatalf("Total = %d, want %d", got, want)
	}
}
