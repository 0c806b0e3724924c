package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
)

// connectRefused is pgx's error for a connection to a port nobody
// listens on.
func connectRefused(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = pgconn.Connect(t.Context(), "postgres://u@"+addr+"/db?sslmode=disable")
	require.Error(t, err)
	return err
}

// connectTimedOut is pgx's error for a connection attempt to a server
// that accepts and never answers, timed out by its context: the
// "failed to connect … context deadline exceeded" of a loaded database.
func connectTimedOut(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var conns []net.Conn // held open, unanswered, until the listener closes
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	ctx, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer stop()
	_, err = pgconn.Connect(ctx, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable")
	require.ErrorContains(t, err, "failed to connect")
	return err
}

// sqliteCode is an error with SQLite's result code, read as
// modernc.org/sqlite's *Error is (whose fields are unexported; some codes,
// as SQLITE_PROTOCOL, cannot be provoked on demand).
type sqliteCode int

func (e sqliteCode) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteCode) Code() int     { return int(e) }

// sqliteBusy is modernc.org/sqlite's error for a write transaction begun
// while another connection holds the database's write lock.
func sqliteBusy(t *testing.T) error {
	path := filepath.Join(t.TempDir(), "busy.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
		require.NoError(t, err)
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	a, b := open(), open()
	ca, err := a.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ca.Close() })
	_, err = ca.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	_, err = b.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.Error(t, err)
	return fmt.Errorf("checkpoint/sqlite: put: %w", err)
}

func TestIsTransientTellsFaultsThatMayPassFromTheRest(t *testing.T) {
	tests := []struct {
		name string
		err  func(*testing.T) error
		want bool
	}{
		{"a refused connection", connectRefused, true},
		{"a connection attempt timed out", connectTimedOut, true},
		{"a reset connection", func(*testing.T) error {
			return fmt.Errorf("put: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
		}, true},
		{"a serialization failure", func(*testing.T) error { return &pgconn.PgError{Code: "40001"} }, true},
		{"a deadlock", func(*testing.T) error { return fmt.Errorf("claim: %w", &pgconn.PgError{Code: "40P01"}) }, true},
		{"a connection failure reported by the server", func(*testing.T) error { return &pgconn.PgError{Code: "08006"} }, true},
		{"the server shutting down", func(*testing.T) error { return &pgconn.PgError{Code: "57P01"} }, true},
		{"too many connections", func(*testing.T) error { return &pgconn.PgError{Code: "53300"} }, true},
		{"SQLITE_BUSY", sqliteBusy, true},
		{"SQLITE_PROTOCOL, a lost race for a WAL lock", func(*testing.T) error { return fmt.Errorf("begin: %w", sqliteCode(15)) }, true},
		{"SQLITE_CORRUPT", func(*testing.T) error { return sqliteCode(11) }, false},
		{"ErrTransient wrapped", func(*testing.T) error { return fmt.Errorf("backend: %w", server.ErrTransient) }, true},
		{"a TransientError", func(*testing.T) error {
			return &server.TransientError{Op: "x", Attempts: 8, Err: errors.New("gone")}
		}, true},
		{"a unique violation", func(*testing.T) error { return &pgconn.PgError{Code: "23505"} }, false},
		{"an undefined table", func(*testing.T) error { return &pgconn.PgError{Code: "42P01"} }, false},
		{"a context cancelled", func(*testing.T) error { return fmt.Errorf("get: %w", context.Canceled) }, false},
		{"a missing checkpoint", func(*testing.T) error { return fmt.Errorf("get: %w", checkpoint.ErrNotFound) }, false},
		{"a corrupt checkpoint", func(*testing.T) error { return &checkpoint.CorruptError{ThreadID: "t", Err: errors.New("bad")} }, false},
		{"a node's error, whatever it wraps", func(*testing.T) error {
			return &graph.NodeError{Node: "n", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
		}, false},
		{"a saver's fault under a node, as a subgraph's", func(*testing.T) error {
			return &graph.NodeError{Node: "n", Err: &graph.SaverError{Op: "saving checkpoint", Thread: "t",
				Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}}
		}, true},
		{"a saver's lasting fault under a node", func(*testing.T) error {
			return &graph.NodeError{Node: "n", Err: &graph.SaverError{Op: "saving checkpoint", Thread: "t",
				Err: &checkpoint.CorruptError{ThreadID: "t", Err: errors.New("bad")}}}
		}, false},
		{"another error", func(*testing.T) error { return errors.New("boom") }, false},
		{"no error", func(*testing.T) error { return nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(t)
			require.Equal(t, tt.want, server.IsTransient(err), "%v", err)
		})
	}
}

func TestTransientErrorIsErrTransientAndShowsItsFault(t *testing.T) {
	cause := &pgconn.PgError{Code: "40001"}
	err := error(&server.TransientError{Op: "finishing run r", Attempts: 8, Err: cause})
	require.ErrorIs(t, err, server.ErrTransient)
	pe, ok := errors.AsType[*pgconn.PgError](err)
	require.True(t, ok)
	require.Equal(t, "40001", pe.Code)
	require.Contains(t, err.Error(), "finishing run r")
}

// downSaver is a saver whose database is unreachable: every call fails
// as a reset connection does.
type downSaver struct{ checkpoint.Saver }

func (downSaver) Get(context.Context, checkpoint.Ref) (*checkpoint.Tuple, error) {
	return nil, fault("get")
}

func (downSaver) Put(context.Context, *checkpoint.Checkpoint) error { return fault("put") }

func (downSaver) PutWrites(context.Context, checkpoint.Ref, []checkpoint.Write) error {
	return fault("put writes")
}

func (downSaver) List(context.Context, string, checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) { yield(nil, fault("list")) }
}

func TestASaverFaultIsAnswered503NotAsTheRequestsFault(t *testing.T) {
	saver := downSaver{checkpoint.NewMemory()}
	s, err := server.New(server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e := &env{t: t, srv: hs}
	tid := e.newThread(map[string]any{"graph_id": "agent"})
	tests := []struct {
		name, method, path string
		body               any
	}{
		{"reading the state", "GET", "/threads/" + tid + "/state", nil},
		{"updating the state", "POST", "/threads/" + tid + "/state", map[string]any{"values": map[string]any{"topic": "x"}}},
		{"reading the history", "POST", "/threads/" + tid + "/history", map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.body)
			require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
			require.Equal(t, "1", r.header.Get("Retry-After"))
			require.Contains(t, string(r.body), "connection reset")
		})
	}
}
