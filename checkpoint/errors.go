package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ErrConflict is matched (with [errors.Is]) by the errors of a write that
// would silently lose or overwrite another writer's data: a [*ConflictError]
// and a [*VersionConflictError].
var ErrConflict = errors.New("checkpoint: conflicting write")

// ConflictError is returned by [Saver.Put] for a checkpoint that is not a
// [Checkpoint.Fork] and whose parent is no longer the latest checkpoint of
// its thread and namespace: another writer moved the thread on since this
// one read it. Storing it would fork the thread silently.
type ConflictError struct {
	ThreadID  string
	Namespace string
	// CheckpointID is the checkpoint that was refused, ParentID its parent.
	CheckpointID string
	ParentID     string
	// LatestID is the thread's latest checkpoint ("" when it has none).
	LatestID string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("checkpoint: thread %q namespace %q: checkpoint %s follows %q, but the latest checkpoint is %q (another writer moved the thread on)",
		e.ThreadID, e.Namespace, e.CheckpointID, e.ParentID, e.LatestID)
}

// Is reports whether target is [ErrConflict].
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// VersionConflictError is returned by [Saver.Put] for a channel value whose
// version is already stored with different bytes. Versions identify values;
// one reused for another value would hand a reader another branch's data.
type VersionConflictError struct {
	ThreadID  string
	Namespace string
	Channel   string
	Version   int64
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("checkpoint: thread %q namespace %q: channel %q version %d is already stored with a different value",
		e.ThreadID, e.Namespace, e.Channel, e.Version)
}

// Is reports whether target is [ErrConflict].
func (e *VersionConflictError) Is(target error) bool { return target == ErrConflict }

// ErrCorrupt is matched (with [errors.Is]) by a [*CorruptError].
var ErrCorrupt = errors.New("checkpoint: corrupt")

// CorruptError reports stored data that cannot be read back as what was
// written: a truncated or impossible value, frontier or pending write.
// Readers return it instead of a wrong value; they never guess.
type CorruptError struct {
	ThreadID     string
	Namespace    string
	CheckpointID string
	// Err says what is wrong.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint: thread %q namespace %q checkpoint %q is corrupt: %v", e.ThreadID, e.Namespace, e.CheckpointID, e.Err)
}

// Unwrap returns what is wrong.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrCorrupt].
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Leaser is implemented by savers that can keep a thread to one live run:
// a run takes the thread's lease before it reads the thread, renews it while
// it runs and releases it at the end; while the lease is held, nobody else
// can take it. A holder that dies stops renewing, and its lease expires
// after its time to live, so the thread can be resumed.
//
// Expiry is decided by one clock for all holders (the database server's,
// for savers that share one; the host's, for a SQLite file, whose users all
// run on one host), so holders need not agree on the time.
//
// A lease is not part of the thread's data: [ThreadDeleter.DeleteThread]
// leaves it held.
//
// A holder can only notice that it lost its lease when it next runs; one
// that was paused past its time to live may still believe it holds the
// thread. Savers that also implement [Fencer] refuse that holder's writes.
type Leaser interface {
	// AcquireLease takes the lease of threadID for holder (a description
	// of who holds it, shown to others) for ttl. When another lease of the
	// thread has not expired, it fails with an error that wraps a
	// [*LeaseHeldError] (see [errors.As]). It fails for an empty threadID
	// or a ttl that is not positive.
	AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (Lease, error)
	// RenewLease extends a held lease to ttl from now. It returns an error
	// wrapping [ErrLeaseLost] when the lease was released or expired and
	// was taken since (a lease that expired but was not taken is renewed).
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives the lease up. Releasing a lease that is no longer
	// held is not an error.
	ReleaseLease(ctx context.Context, lease Lease) error
}

// Lease is a thread's lease as taken by [Leaser.AcquireLease].
type Lease struct {
	ThreadID string
	// Holder describes the holder, as given to AcquireLease.
	Holder string
	// Token is unique to this acquisition: it, not Holder, identifies the
	// lease, so two runs with the same Holder never share one.
	Token string
	// Fence is the lease's fencing token: it grows with every acquisition
	// of the thread's lease, so a later holder always has a greater Fence
	// than every earlier one (see [Fencer]).
	Fence int64
	// Expires is when the lease expires unless renewed, by the saver's
	// clock.
	Expires time.Time
}

// LeaseHeldError is wrapped by the errors of [Leaser.AcquireLease] for a
// thread whose lease is held by another, unexpired holder.
type LeaseHeldError struct {
	ThreadID string
	// Holder is the holder's description.
	Holder string
	// Expires is when the lease expires unless renewed.
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("checkpoint: thread %q is in use by %s (lease expires %s unless renewed)", e.ThreadID, e.Holder, e.Expires.Format(time.RFC3339Nano))
}

// ErrLeaseLost is wrapped by [Leaser.RenewLease] errors for a lease that is
// no longer held.
var ErrLeaseLost = errors.New("checkpoint: lease lost")

// NewLeaseToken returns a new random lease token (32 hex digits), for
// [Leaser] implementations.
func NewLeaseToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckLeaseArgs returns ctx's error, or an error for an empty thread ID or
// a ttl that is not positive: the argument checks of AcquireLease and
// RenewLease, for [Leaser] implementations.
func CheckLeaseArgs(ctx context.Context, threadID string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errors.New("empty thread ID")
	}
	if ttl <= 0 {
		return fmt.Errorf("time to live %v is not positive", ttl)
	}
	return nil
}
