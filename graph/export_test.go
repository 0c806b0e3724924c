package graph

// SetLeaseLostHook makes f run each time a run's lease renewal finds the
// lease lost, after the run can see it; it returns a function that removes
// the hook.
func SetLeaseLostHook(f func()) (restore func()) {
	testHookLeaseLost = f
	return func() { testHookLeaseLost = nil }
}
