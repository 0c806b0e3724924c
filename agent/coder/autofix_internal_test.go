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

func TestChangesTestsMatchesOnlyRequestsToChangeTests(t *testing.T) {
	for _, tc := range []struct {
		request string
		changes bool
	}{
		{"add a test of Sum(nil) to calc_test.go", true},
		{"write tests for cart.go", true},
		{"rename Total to Sum and update the tests", true},
		{"change TestSum to expect 6", true},
		{"edit calc_test.go", true},
		{"extend the unit tests", true},
		{"cover Total with tests", true},
		{"add test_total to test_cart.py", true},
		{"improve the testing helpers", true},
		{"change Sum so that the tests pass", false},
		{"fix the bug and update the README; all tests must pass", false},
		{"improve performance without breaking tests", false},
		{"add input validation; run the tests", false},
		{"make the tests pass", false},
		{"fix the failing test", false},
	} {
		t.Run(tc.request, func(t *testing.T) {
			require.Equal(t, tc.changes, changesTests.MatchString(tc.request))
		})
	}
}
