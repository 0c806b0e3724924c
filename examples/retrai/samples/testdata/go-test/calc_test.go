package calc

import "testing"

func TestSumRange(t *testing.T) {
	tests := []struct {
		a, b, want int
	}{
		{1, 5, 15},
		{3, 3, 3},
		{-2, 2, 0},
		{5, 1, 0},
	}
	for _, tt := range tests {
		if got := SumRange(tt.a, tt.b); got != tt.want {
			t.Errorf("SumRange(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
