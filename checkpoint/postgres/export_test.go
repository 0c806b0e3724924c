package postgres

// LeaseLockKey is leaseLockKey, the advisory lock of a thread's lease.
func LeaseLockKey(thread string) int64 { return leaseLockKey(thread) }

// ThreadLockKey is threadLockKey, the advisory lock of a thread's Puts.
func ThreadLockKey(thread, ns string) int64 { return threadLockKey(thread, ns) }
