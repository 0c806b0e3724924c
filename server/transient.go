package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/backoff"
)

// ErrTransient is matched (with errors.Is) by the faults of a [Backend] or
// a checkpoint saver that may pass if the operation is tried again: see
// [IsTransient]. A Backend may wrap its own such faults with it.
var ErrTransient = errors.New("server: transient fault")

// TransientError is a transient fault (see [IsTransient]) a Server gave up
// retrying: Op names what failed, Attempts how many times it was tried.
// errors.Is(err, [ErrTransient]) reports true for it, and errors.Is and
// errors.As see the fault through it.
type TransientError struct {
	Op       string
	Attempts int
	Err      error
}

func (e *TransientError) Error() string {
	return "server: " + e.Op + ": transient fault (tried " + strconv.Itoa(e.Attempts) + " times): " + e.Err.Error()
}

func (e *TransientError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrTransient].
func (e *TransientError) Is(target error) bool { return target == ErrTransient }

// IsTransient reports whether err is a fault of the database under a
// [Backend] or a saver that may pass if the operation is tried again: an
// error wrapping [ErrTransient]; a lost or refused connection or a
// network timeout (a net.Error, ECONNRESET, ECONNREFUSED, EPIPE, an
// unexpected EOF); a deadline exceeded, such as a connection attempt
// timing out ("failed to connect … context deadline exceeded"); a
// PostgreSQL error (an error with a SQLState method, as pgconn's) of class
// 08 (connection exception) or 53 (insufficient resources), 40001
// (serialization failure), 40P01 (deadlock), 57P01–57P03 (the server
// shutting down or starting); a driver error that says it is safe to
// retry (a SafeToRetry method returning true, as pgx's); and SQLite's
// SQLITE_BUSY, SQLITE_LOCKED and SQLITE_PROTOCOL (an error with a Code
// method, as modernc.org/sqlite's, whose primary code is 5, 6 or 15; the
// last is a connection that kept losing the race for a WAL lock). The package
// imports no driver: it reads these errors through their methods.
//
// A context cancelled is not transient: whoever cancelled it wanted the
// operation to stop. Nor is an error a graph's node returned (a
// graph.NodeError wrapping any of the above): a node has its retry policy,
// and its fault is the graph's own. The exception is a node whose subgraph
// (or a graph it invoked) failed to reach its saver: a graph.NodeError
// wrapping a graph.SaverError is transient when the saver's fault is.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if ne, ok := errors.AsType[*graph.NodeError](err); ok {
		se, ok := errors.AsType[*graph.SaverError](ne.Err)
		return ok && IsTransient(se.Err)
	}
	if errors.Is(err, ErrTransient) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	if e, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		switch code := e.SQLState(); {
		case len(code) == 5 && (code[:2] == "08" || code[:2] == "53"),
			code == "40001", code == "40P01", code == "57P01", code == "57P02", code == "57P03":
			return true
		}
	}
	if e, ok := errors.AsType[interface {
		error
		SafeToRetry() bool
	}](err); ok && e.SafeToRetry() {
		return true
	}
	if e, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok {
		switch e.Code() & 0xff {
		case 5, 6, 15: // SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL
			return true
		}
	}
	return false
}

// Retries of an operation of a Server on a [Backend] or its saver that
// failed with a transient fault: the first wait, doubling up to the last,
// and how many tries in all.
const (
	retryFirstWait = 20 * time.Millisecond
	retryMaxWait   = time.Second
	retryTries     = 8
)

// retryDelay is the wait before try n+1 after try n failed (see
// backoff.Delay: jittered, so that processes retrying together spread out).
func retryDelay(n int) time.Duration { return backoff.Delay(n, retryFirstWait, retryMaxWait) }

// retry calls f until it succeeds, fails with an error that is not
// transient, ctx is done, or it failed [retryTries] times (then with a
// *TransientError for op). It waits between tries, [retryFirstWait]
// doubling up to [retryMaxWait], so that the tries span about four
// seconds. f is called only when it may be called again: an operation
// that is not idempotent must not be retried this way.
func retry(ctx context.Context, op string, f func(context.Context) error) error {
	for n := 1; ; n++ {
		err := f(ctx)
		if err == nil || !IsTransient(err) || ctx.Err() != nil {
			return err
		}
		if n == retryTries {
			return &TransientError{Op: op, Attempts: n, Err: err}
		}
		if backoff.Sleep(ctx, retryDelay(n)) != nil {
			return err
		}
	}
}

// retry1 is [retry] for an f that returns a value.
func retry1[T any](ctx context.Context, op string, f func(context.Context) (T, error)) (T, error) {
	var out T
	err := retry(ctx, op, func(ctx context.Context) error {
		var err error
		out, err = f(ctx)
		return err
	})
	return out, err
}

// createOnce creates something through create, retrying transient faults
// as [retry] does, without creating it twice: a try that follows a fault
// first asks find for what an earlier try may have created (its commit
// made, its answer lost), and that is the answer when found. create must
// create under an id of the caller's choosing, which find looks up.
//
// What an earlier try created and something else deleted before find
// looked (a stateless run that ran and was deleted within the retry's
// wait) is created again.
func createOnce[T any](ctx context.Context, op string, find func(context.Context) (T, bool, error), create func(context.Context) (T, error)) (T, error) {
	faulted := false
	return retry1(ctx, op, func(ctx context.Context) (T, error) {
		if faulted {
			if got, ok, err := find(ctx); err != nil || ok {
				return got, err
			}
		}
		faulted = true // the next try, if any, follows a fault
		return create(ctx)
	})
}
