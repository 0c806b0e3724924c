package server

import "time"

// RunWatcher is a [Backend] that tells a process when a run changed,
// whichever process changed it, so that the requests waiting on a run
// (a stream, a join, a wait) wait for its changes instead of polling the
// Backend each on its own. It is optional, as database/sql/driver's
// optional interfaces are: a Server uses it when its Backend has it and
// polls otherwise ([WithPollInterval]).
//
// server/postgres implements it with one LISTEN connection per Backend
// (its writes NOTIFY in the transaction that makes the change) and
// server/sqlite with one poller per Backend: however many requests wait,
// a process does one source's work, and idle waiters cost the database
// nothing more.
type RunWatcher interface {
	// WatchRun returns a channel closed once the run may have changed
	// after WatchRun was called — an event appended to its stream, its
	// status changed, the run deleted — and the function to call when
	// done waiting, which frees what the watch holds (it may be called
	// more than once). A change is never missed, though the channel may
	// be closed with nothing changed; the caller calls WatchRun again,
	// then reads the run, to wait for the next change, and stops the
	// previous watch after the new one is made (so that what the Backend
	// keeps of a watched run carries over).
	WatchRun(runID string) (changed <-chan struct{}, stop func())
}

// watchRun returns a channel closed at the run's next change, and the
// function to call once done with it: the Backend's, when it is a
// [RunWatcher], else one closed at the run's next event or end in this
// process only (the caller polls for the others, see [Server.pollAfter]).
func (s *Server) watchRun(id string) (<-chan struct{}, func()) {
	if w, ok := s.cfg.backend.(RunWatcher); ok {
		return w.WatchRun(id)
	}
	return s.shared.watchRun(id)
}

// pollAfter returns a channel that delivers after wait, when the
// requests waiting on a run must poll the Backend (it is not a
// [RunWatcher]), and nil, which never delivers, when they wait for its
// changes only.
func (s *Server) pollAfter(wait time.Duration) <-chan time.Time {
	if _, ok := s.cfg.backend.(RunWatcher); ok {
		return nil
	}
	return time.After(wait)
}

// pushed reports whether the Backend tells of a run's changes (it is a
// [RunWatcher]).
func (s *Server) pushed() bool {
	_, ok := s.cfg.backend.(RunWatcher)
	return ok
}
