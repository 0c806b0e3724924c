// Package clock holds the replaceable notion of the current time that the
// stores (store.Memory, store/sqlite and store/postgres) stamp items and
// decide expiry with.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock reads the current time from the function last given to Set, or
// from time.Now. Its zero value is ready to use, and it is safe for
// concurrent use.
type Clock struct {
	now atomic.Pointer[func() time.Time]
}

// Set makes c read the current time from now; nil restores time.Now.
func (c *Clock) Set(now func() time.Time) {
	if now == nil {
		c.now.Store(nil)
		return
	}
	c.now.Store(&now)
}

// Now returns the current time, in UTC.
func (c *Clock) Now() time.Time {
	if f := c.now.Load(); f != nil {
		return (*f)().UTC()
	}
	return time.Now().UTC()
}
