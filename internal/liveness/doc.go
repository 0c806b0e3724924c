// Package liveness tells whether the process that took a lease is still
// alive, when it ran on this host: a lease whose holder died on this host
// can be taken over at once instead of after its time to live.
//
// A holder is identified by [Self]: the host (the boot of the kernel and
// the PID namespace, so that two containers sharing a host name, or a
// machine rebooted since, are never taken for one another), its PID, and
// the start time of the process with that PID, so that a PID reused by a
// later process is not taken for the holder. Only Linux, through /proc,
// knows all three; elsewhere [Self] is the zero Proc and [Dead] is always
// false, so leases there expire after their time to live only.
package liveness
