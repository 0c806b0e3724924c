package liveness

import "sync"

// Proc identifies a process across hosts and time. The zero Proc is an
// unknown process.
type Proc struct {
	// Host identifies the host and PID namespace ("" when unknown).
	Host string
	PID  int
	// Start is the process's start time, in clock ticks since boot.
	Start int64
}

var self = sync.OnceValue(func() Proc {
	p, ok := selfProc()
	if !ok {
		return Proc{}
	}
	return p
})

// Self returns this process, or the zero Proc where that is unknown.
func Self() Proc { return self() }

// Dead reports whether p is known to be dead: it ran on this host (same
// boot, same PID namespace) and no live process has its PID and start time
// now. A zombie (killed, not yet reaped) is dead. It is false whenever
// that cannot be known: another host, or an unknown p or host.
func Dead(p Proc) bool {
	me := Self()
	if p.Host == "" || me.Host == "" || p.Host != me.Host || p.PID <= 0 {
		return false
	}
	if p.PID == me.PID {
		return p.Start != me.Start
	}
	return !alive(p.PID, p.Start)
}
