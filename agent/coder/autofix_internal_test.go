package coder

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRemovesTestsMatchesOnlyRequestsToRemoveTests(t *testing.T) {
	for _, tc := range []struct {
		request string
		removes bool
	}{
		{"delete the test TestSum in calc_test.go", true},
		{"remove the flaky test", true},
		{"skip the slow integration tests", true},
		{"drop TestTotal", true},
		{"rename TestSum to TestSumOfThree", true},
		{"Please disable these tests for now", true},
		{"fix the failing test", false},
		{"make the tests pass", false},
		{"rename Total to Sum and update the tests", false},
		{"drop the cache and make sure the tests pass", false},
		{"remove the dead code in cart.go; the tests must still pass", false},
		{"add a test for Total", false},
		{"remove the testing helpers from cart.go", false},
	} {
		t.Run(tc.request, func(t *testing.T) {
			require.Equal(t, tc.removes, removesTests.MatchString(tc.request))
		})
	}
}
