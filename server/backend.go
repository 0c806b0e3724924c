package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Backend keeps a Server's threads, runs and assistants where several server
// processes share them, such as a PostgreSQL database (package
// server/postgres) or a SQLite file (package server/sqlite);
// server/backendtest checks an implementation. Without [WithBackend] a
// Server keeps them in a [MemoryBackend] of its own, for itself alone:
// the same code path, in one process's memory.
//
// A Backend decides the multitask strategies against its shared rows and
// guarantees that one thread never has two running runs, whichever
// processes ask: [Backend.CreateRun] applies the strategy atomically, and
// [Backend.ClaimRun] hands a run to one process at a time, under a lease
// that the process renews and that another process may take over once it
// expired. Every method that changes a claimed run takes the [Claim] and
// fails with an error wrapping [ErrLeaseLost] when the claim is no longer
// the run's. Lookups of what does not exist fail with an error wrapping
// [ErrNotFound].
type Backend interface {
	// CreateThread stores a new thread. A thread with the same id fails
	// with an error wrapping [ErrExists], unless ifExists is "do_nothing":
	// then the stored thread is returned.
	CreateThread(ctx context.Context, t ThreadRecord, ifExists string) (ThreadRecord, error)
	// Thread returns the thread with the given id.
	Thread(ctx context.Context, id string) (ThreadRecord, error)
	// SearchThreads returns the threads q selects, sorted and paged as q
	// says, and how many it selects in all.
	SearchThreads(ctx context.Context, q ThreadQuery) ([]ThreadRecord, int, error)
	// PatchThread merges metadata into the thread's. A graph_id in
	// metadata other than the one the thread has fails with an error
	// wrapping [ErrGraphMismatch], decided atomically with the write.
	PatchThread(ctx context.Context, id string, metadata map[string]any) (ThreadRecord, error)
	// SetThreadState records the thread's values, interrupts and status
	// after its state changed outside a run; a thread with pending or
	// running runs stays "busy".
	SetThreadState(ctx context.Context, id string, st ThreadState) error
	// DeleteThread deletes the thread and its runs, except the running
	// ones: they are flagged cancelled, deleted when they finish, and their
	// ids returned, so that the caller can wait for them before deleting
	// the thread's checkpoints.
	DeleteThread(ctx context.Context, id string) (running []string, err error)

	// CreateRun stores r as a pending run of its thread, following
	// r.MultitaskStrategy when the thread has a pending or running run:
	// "reject" fails with an error wrapping [ErrThreadBusy]; "interrupt"
	// and "rollback" flag the running run cancelled (rollback also to be
	// deleted, the thread to restart from where it started); "enqueue"
	// queues r. A missing thread fails with [ErrNotFound] unless create is
	// not nil: then create is stored first. A thread whose metadata names
	// another graph_id than r's fails with [ErrGraphMismatch].
	CreateRun(ctx context.Context, r RunRecord, create *ThreadRecord) (RunRecord, error)
	// ClaimRun hands the oldest claimable run to holder for ttl: a pending
	// run that is the oldest of a thread with no running run, or a running
	// run whose lease expired. With graphs, only a run whose thread's
	// graph_id is one of them is claimable (a process serves those graphs
	// only; another takes the rest); nil graphs means any. It returns nil
	// when there is none.
	ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*Claim, error)
	// RenewLease extends the claim's lease by ttl and returns why the run
	// was cancelled ("" while it is not).
	RenewLease(ctx context.Context, c *Claim, ttl time.Duration) (cancelled string, err error)
	// StartRun records the checkpoint the run starts from ("" for none),
	// the one a rollback returns to.
	StartRun(ctx context.Context, c *Claim, checkpointID string) error
	// ReleaseRun gives the claimed run up, unfinished, to be claimed again
	// at once.
	ReleaseRun(ctx context.Context, c *Claim) error
	// FinishRun ends the claimed run as res says, ends its stream with an
	// "error" event when res has one and an "end" event, and updates its
	// thread, as one atomic change: a client that read the end (or the
	// error) finds the run ended and its thread as res says
	// (idle, unless another run is queued). A run a rollback cancelled is
	// deleted instead, and the thread's next run starts from the
	// checkpoint it started from; a run whose thread was deleted while it
	// ran is deleted too.
	FinishRun(ctx context.Context, c *Claim, res RunResult) error
	// AppendEvent adds an event to the claimed run's stream and returns
	// its id (0 for the first of the run).
	AppendEvent(ctx context.Context, c *Claim, name string, data json.RawMessage) (int, error)
	// Events returns the run's events with ids from from on, oldest first.
	Events(ctx context.Context, runID string, from int) ([]Event, error)

	// Run returns the run with the given id.
	Run(ctx context.Context, id string) (RunRecord, error)
	// ListRuns returns the thread's runs of the given status ("" for all),
	// in creation order, paged, and how many there are.
	ListRuns(ctx context.Context, threadID, status string, limit, offset int) ([]RunRecord, int, error)
	// CancelRun ends a pending run "interrupted" at once and flags a
	// running one cancelled with reason; an ended run is left as it is.
	CancelRun(ctx context.Context, id, reason string) (RunRecord, error)
	// DeleteRun deletes an ended run; a pending or running one fails with
	// an error wrapping [ErrThreadBusy].
	DeleteRun(ctx context.Context, id string) error

	// The assistants other than the graphs' own (those stay computed by
	// each process) live in the Backend too, with their versions, so
	// that an assistant created through one process is read, searched,
	// patched and run through any other. They are methods of Backend, not
	// of a second interface, because a process that kept them apart would
	// fail the runs naming an assistant another process created.

	// CreateAssistant stores a as the assistant's version 1 (a.Version
	// and a.UpdatedAt are ignored). An assistant with the same id fails
	// with an error wrapping [ErrExists], unless ifExists is
	// "do_nothing": then the stored assistant is returned.
	CreateAssistant(ctx context.Context, a AssistantRecord, ifExists string) (AssistantRecord, error)
	// Assistant returns the assistant with the given id, as its current
	// version says.
	Assistant(ctx context.Context, id string) (AssistantRecord, error)
	// SearchAssistants returns the assistants q selects, the newest first
	// (then by id), paged as q says, and how many it selects in all.
	SearchAssistants(ctx context.Context, q AssistantQuery) ([]AssistantRecord, int, error)
	// PatchAssistant applies p to the assistant and stores the result as
	// a new version, numbered one more than its highest version, which
	// becomes the current one. Two patches at once, through any
	// processes, get two distinct versions.
	PatchAssistant(ctx context.Context, id string, p AssistantPatch) (AssistantRecord, error)
	// DeleteAssistant deletes the assistant and its versions. Its runs
	// are left as they are: each records the graph it runs.
	DeleteAssistant(ctx context.Context, id string) error
	// AssistantVersions returns the assistant's versions whose metadata
	// contains metadata, the newest first, paged, and how many there are.
	// A version's CreatedAt and UpdatedAt are when it was made.
	AssistantVersions(ctx context.Context, id string, metadata map[string]any, limit, offset int) ([]AssistantRecord, int, error)
	// SetLatestAssistantVersion makes the assistant's version the current
	// one; it fails with an error wrapping [ErrNotFound] when the
	// assistant has no such version.
	SetLatestAssistantVersion(ctx context.Context, id string, version int) (AssistantRecord, error)
}

// Errors a [Backend] returns, wrapped.
var (
	// ErrNotFound: no thread, run or assistant (or assistant version) has
	// the id.
	ErrNotFound = errors.New("server: not found")
	// ErrExists: a thread or assistant with the id exists already.
	ErrExists = errors.New("server: already exists")
	// ErrThreadBusy: the thread has a pending or running run (a reject),
	// or the run to delete has not ended.
	ErrThreadBusy = errors.New("server: thread is busy")
	// ErrLeaseLost: the claim is no longer the run's.
	ErrLeaseLost = errors.New("server: run lease lost")
	// ErrGraphMismatch: the thread holds the state of another graph.
	ErrGraphMismatch = errors.New("server: thread holds another graph's state")
)

// ThreadRecord is a thread as a [Backend] stores it; its JSON is the
// API's Thread.
type ThreadRecord struct {
	ID         string          `json:"thread_id"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	Metadata   map[string]any  `json:"metadata"`
	Status     string          `json:"status"`
	Config     map[string]any  `json:"config"`
	Values     json.RawMessage `json:"values"`     // null before any run
	Interrupts json.RawMessage `json:"interrupts"` // an object of task id → interrupts
}

// ThreadState is what a thread shows of its latest state. Nil Values or
// Interrupts leave the stored ones as they are.
type ThreadState struct {
	Status     string // idle, interrupted or error
	Values     json.RawMessage
	Interrupts json.RawMessage
}

// ThreadQuery selects threads for [Backend.SearchThreads]; the filters
// are JSON containment, like PostgreSQL's @>.
type ThreadQuery struct {
	IDs      []string
	Metadata map[string]any
	Values   map[string]any
	Status   string
	SortBy   string // thread_id, status, created_at or updated_at
	Desc     bool
	Limit    int // 0 counts only
	Offset   int
}

// RunRecord is a run as a [Backend] stores it; its JSON is the API's Run.
type RunRecord struct {
	ID                string          `json:"run_id"`
	ThreadID          string          `json:"thread_id"`
	AssistantID       string          `json:"assistant_id"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	Status            string          `json:"status"`
	Metadata          map[string]any  `json:"metadata"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	Kwargs            json.RawMessage `json:"kwargs"`
	// Result is what wait and join answer once the run ended: its last
	// values, or {"__error__": {error, message}}.
	Result json.RawMessage `json:"-"`
	// Attempt counts the claims of the run (0 while pending).
	Attempt int `json:"-"`
	// GraphID is the graph the run runs; its thread's metadata records it.
	GraphID string `json:"-"`
}

// ended reports whether the run has ended.
func (r RunRecord) ended() bool { return r.Status != runPending && r.Status != runRunning }

// AssistantRecord is an assistant, or one of its versions, as a
// [Backend] stores it; its JSON is the API's Assistant.
type AssistantRecord struct {
	ID          string          `json:"assistant_id"`
	GraphID     string          `json:"graph_id"`
	Config      map[string]any  `json:"config"`
	Context     json.RawMessage `json:"context"` // JSON; {} when empty
	Metadata    map[string]any  `json:"metadata"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Version     int             `json:"version"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// AssistantQuery selects assistants for [Backend.SearchAssistants].
type AssistantQuery struct {
	GraphID  string         // "" for any
	Name     string         // a part of the name, in any case; "" for any
	Metadata map[string]any // JSON containment, like PostgreSQL's @>
	Limit    int            // 0 counts only
	Offset   int
}

// AssistantPatch is what [Backend.PatchAssistant] changes; a zero field
// keeps the current value, and Metadata is merged into the current
// metadata.
type AssistantPatch struct {
	GraphID     string
	Config      map[string]any
	Context     json.RawMessage
	Metadata    map[string]any
	Name        string
	Description *string
}

// Claim is a run handed to one process by [Backend.ClaimRun].
type Claim struct {
	Run    RunRecord
	Holder string
	// ResetTo, when not nil, is the checkpoint a rollback left the thread
	// at: the run starts from it ("" for an empty thread).
	ResetTo *string
}

// RunResult is how a claimed run ended.
type RunResult struct {
	Status string // success, error or interrupted
	Result json.RawMessage
	Thread ThreadState
	// DropThread deletes the run's thread, not the run: the thread of a
	// stateless run made for it alone.
	DropThread bool
	// Error, when not nil, is the data of an "error" event that FinishRun
	// appends to the run's stream before its end, in the same change: a
	// client that stops reading at a failed run's error finds it ended.
	Error json.RawMessage
}

// Event is one event of a run's stream.
type Event struct {
	ID   int
	Name string
	Data json.RawMessage
}

// Defaults of the options of a Server's run service.
const (
	// DefaultWorkers is how many runs a server with [WithBackend]
	// executes at once when [WithWorkers] is not given.
	DefaultWorkers = 8
	// DefaultRunLeaseTTL is a claimed run's lease when [WithRunLeaseTTL]
	// is not given.
	DefaultRunLeaseTTL = 10 * time.Second
	// DefaultPollInterval is how often the backend is polled when
	// [WithPollInterval] is not given.
	DefaultPollInterval = 100 * time.Millisecond
)

// WithBackend keeps threads, runs and assistants in b, shared with every server
// process using the same store, instead of in a [MemoryBackend] of the
// server's own. The server then
// executes the runs it claims from b, [WithWorkers] at once, under leases
// of [WithRunLeaseTTL]; it needs [WithCheckpointer] with the saver
// its graphs share (a run taken over from a dead process resumes from the
// thread's last checkpoint). The graphs' own assistants stay computed by
// each process. A claimed run holds its thread's graph lease
// (graph.WithLeaseTTL) for the time of its run lease, whatever the graph
// was compiled with: a run taken over from a dead process finds its thread
// free within the run lease's time, and the dead process, were it only
// paused, is fenced by both leases.
func WithBackend(b Backend) Option {
	return optionFunc(func(c *config) error {
		if b == nil {
			return errors.New("server: WithBackend: nil backend")
		}
		c.backend = b
		return nil
	})
}

// WithWorkers sets how many runs a server executes at once (default
// [DefaultWorkers] with [WithBackend]; without it, as many as there are
// threads with a run: each thread runs one at a time anyway).
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return fmt.Errorf("server: WithWorkers(%d): must be at least 1", n)
		}
		c.workers = n
		return nil
	})
}

// WithRunLeaseTTL sets how long a claimed run stays its process's without
// a renewal (default [DefaultRunLeaseTTL]): the time after which a dead
// process's run is taken over. A live process renews it every ttl/4 and
// stops a run whose lease it could not renew for ttl/2.
func WithRunLeaseTTL(ttl time.Duration) Option {
	return optionFunc(func(c *config) error {
		if ttl < 100*time.Millisecond {
			return fmt.Errorf("server: WithRunLeaseTTL(%v): must be at least 100ms", ttl)
		}
		c.leaseTTL = ttl
		return nil
	})
}

// WithPollInterval sets how often a server looks for runs to claim when
// idle, and for the events and ends of runs other processes execute
// (default [DefaultPollInterval]); a request waiting on such a run backs
// off to ten times that while nothing changes. A Backend that is a
// [RunWatcher] tells the requests of the changes instead, and they do not
// poll. The runs a server queues or ends itself wake it at once: without
// [WithBackend] it never waits for a poll.
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("server: WithPollInterval(%v): must be positive", d)
		}
		c.poll = d
		return nil
	})
}

// WithHolder names this process in the leases of the runs it claims
// (default: a random id); a name shared by two live processes defeats
// the leases.
func WithHolder(name string) Option {
	return optionFunc(func(c *config) error {
		if name == "" {
			return errors.New("server: WithHolder: empty name")
		}
		c.holder = name
		return nil
	})
}
