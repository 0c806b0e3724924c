package workload_test

// Checkpointer benchmarks: W5 (a 1,000-step loop, one checkpoint per step)
// and a 1,000-turn chat loop (one ~200-byte message appended per step) on
// the in-memory, SQLite and PostgreSQL savers. Postgres runs when
// AGENTGRAPH_TEST_POSTGRES_URL is set (scripts/pg-test.sh starts a
// throwaway server); each benchmark gets a schema of its own, dropped at
// the end. bench/SAVERS.md records the figures and the commands.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

const pgURLEnv = "AGENTGRAPH_TEST_POSTGRES_URL"

// backend opens a fresh saver of one kind for tb; bytes, when not nil,
// measures its storage once the runs are done.
type backend struct {
	name string
	open func(tb testing.TB) (checkpoint.Saver, *storage)
}

var backends = []backend{
	{"memory", func(testing.TB) (checkpoint.Saver, *storage) { return checkpoint.NewMemory(), nil }},
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

// storage measures the bytes a saver stores.
type storage struct {
	measure func(tb testing.TB) usage
}

// usage is what a saver stores.
type usage struct {
	// total is the database's size: the SQLite file once the saver closed,
	// or pg_total_relation_size of the Postgres saver's tables (indexes
	// and TOAST included).
	total int64
	// blobs is the size of the value blobs' data alone.
	blobs int64
	// checkpoints is the number of checkpoints stored.
	checkpoints int64
	// tables breaks total down by table and index (SQLite's dbstat, whose
	// sum is the file without its free pages) or by table with its
	// indexes and TOAST (Postgres).
	tables map[string]int64
}

func (u usage) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(u.tables)) {
		parts = append(parts, fmt.Sprintf("%s %d B (%.0f B/cp)", k, u.tables[k], float64(u.tables[k])/float64(u.checkpoints)))
	}
	return fmt.Sprintf("%d checkpoints, database %d B, blobs %d B; %s", u.checkpoints, u.total, u.blobs, strings.Join(parts, ", "))
}

func openSQLite(tb testing.TB) (checkpoint.Saver, *storage) {
	path := filepath.Join(tb.TempDir(), "bench.db")
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(tb, err)
	closed := false
	tb.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	return s, &storage{measure: func(tb testing.TB) usage {
		// Closing the last connection checkpoints the WAL into the file.
		require.NoError(tb, s.Close())
		closed = true
		fi, err := os.Stat(path)
		require.NoError(tb, err)
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
		require.NoError(tb, err)
		defer db.Close()
		u := usage{total: fi.Size(), tables: map[string]int64{}}
		require.NoError(tb, db.QueryRow(`SELECT COALESCE(SUM(LENGTH(data)), 0), (SELECT COUNT(*) FROM checkpoints) FROM blobs`).Scan(&u.blobs, &u.checkpoints))
		rows, err := db.Query(`SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
		require.NoError(tb, err)
		defer rows.Close()
		for rows.Next() {
			var name string
			var size int64
			require.NoError(tb, rows.Scan(&name, &size))
			u.tables[name] = size
		}
		require.NoError(tb, rows.Err())
		return u
	}}
}

func openPostgres(tb testing.TB) (checkpoint.Saver, *storage) {
	url, schema, conn := pgSchema(tb)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	require.NoError(tb, err)
	tb.Cleanup(func() { s.Close() })
	return s, &storage{measure: func(tb testing.TB) usage {
		q := pgx.Identifier{schema}.Sanitize() + "."
		u := usage{tables: map[string]int64{}}
		// The saver's tables (package doc); VACUUM is not needed: rows
		// are only inserted.
		for _, table := range []string{"agentgraph_checkpoints", "agentgraph_blobs", "agentgraph_writes"} {
			var size int64
			require.NoError(tb, conn.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, q+table).Scan(&size))
			u.tables[table] = size
			u.total += size
		}
		require.NoError(tb, conn.QueryRow(ctx, `SELECT (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM `+q+`agentgraph_blobs),
				(SELECT COUNT(*) FROM `+q+`agentgraph_checkpoints)`).Scan(&u.blobs, &u.checkpoints))
		return u
	}}
}

// pgSchema skips tb unless AGENTGRAPH_TEST_POSTGRES_URL is set, and
// returns the URL, the name of a fresh schema, dropped when tb ends, and
// a connection to the database (closed then) for tb's own statements.
func pgSchema(tb testing.TB) (url, schema string, conn *pgx.Conn) {
	url = os.Getenv(pgURLEnv)
	if url == "" {
		tb.Skip("set " + pgURLEnv + " (scripts/pg-test.sh starts a throwaway server)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = fmt.Sprintf("agt_bench_%d_%s", os.Getpid(), hex.EncodeToString(b[:]))
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	return url, schema, conn
}

var w5Thread atomic.Int64

// runW5 is workload.RunW5 with a durability mode.
func runW5(ctx context.Context, g *graph.Graph[workload.Counter], d graph.Durability) error {
	id := "w5d-" + strconv.FormatInt(w5Thread.Add(1), 10)
	out, err := g.Invoke(ctx, workload.Counter{Counter: state.Set(0)}, graph.WithThread(id), graph.WithRecursionLimit(workload.W5Steps+100), graph.WithDurability(d))
	if err != nil {
		return err
	}
	if out.Counter.Get() != workload.W5Steps {
		return fmt.Errorf("W5: got counter %d", out.Counter.Get())
	}
	return nil
}

// BenchmarkW5Savers runs W5 — 1,000 steps, a checkpoint after each — on
// every saver: "sync" is workload.RunW5 (the default durability), "async"
// and "exit" the other durability modes.
func BenchmarkW5Savers(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for _, mode := range []struct {
				name string
				d    graph.Durability
			}{{"sync", graph.DurabilitySync}, {"async", graph.DurabilityAsync}, {"exit", graph.DurabilityExit}} {
				b.Run(mode.name, func(b *testing.B) {
					saver, _ := be.open(b)
					g, err := workload.W5(saver)
					require.NoError(b, err)
					b.ReportAllocs()
					for b.Loop() {
						if mode.d == graph.DurabilitySync {
							err = workload.RunW5(ctx, g)
						} else {
							err = runW5(ctx, g, mode.d)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W5Steps), "ns/step")
				})
			}
		})
	}
}

// ChatTurns is the length of the chat loop.
const ChatTurns = 1000

type chatState struct {
	Messages state.Messages
}

// chatMessage returns the i-th message of a synthetic chat, alternating
// human and AI turns: about 200 bytes of JSON each.
func chatMessage(i int) state.Message {
	text := fmt.Sprintf("turn %04d: %s", i, strings.Repeat("lorem ipsum ", 11))
	m := state.Human(text)
	if i%2 == 1 {
		m = state.AI(text)
	}
	m.ID = fmt.Sprintf("msg-%04d", i)
	return m
}

// chatGraph appends one message per step until there are turns.
func chatGraph(tb testing.TB, saver checkpoint.Saver, turns int) *graph.Graph[chatState] {
	b := graph.New[chatState]()
	b.AddNode("turn", func(_ context.Context, s chatState) (chatState, error) {
		var w chatState
		w.Messages.Append(chatMessage(s.Messages.Len()))
		return w, nil
	})
	b.AddEdge(graph.Start, "turn")
	b.AddConditionalEdges("turn", func(_ context.Context, s chatState) (string, error) {
		if s.Messages.Len() < turns {
			return "turn", nil
		}
		return graph.End, nil
	}, graph.WithDestinations("turn", graph.End))
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(tb, err)
	return g
}

var chatThread atomic.Int64

func runChat(ctx context.Context, g *graph.Graph[chatState], turns int) error {
	id := "chat-" + strconv.FormatInt(chatThread.Add(1), 10)
	out, err := g.Invoke(ctx, chatState{}, graph.WithThread(id), graph.WithRecursionLimit(turns+100))
	if err != nil {
		return err
	}
	if n := out.Messages.Len(); n != turns {
		return fmt.Errorf("chat: got %d messages", n)
	}
	return nil
}

// chatSizes returns the JSON size of the final message list and the sum
// of its sizes at every checkpoint (what storing the list whole at each
// step would take).
func chatSizes(tb testing.TB, turns int) (final, naive int64) {
	size := int64(1) // "["
	for i := range turns {
		b, err := json.Marshal(chatMessage(i))
		require.NoError(tb, err)
		size += int64(len(b)) + 1 // the message and "," or "]"
		naive += size
	}
	return size, naive
}

// BenchmarkChatSavers runs a 1,000-turn chat loop (one ~200-byte message
// appended per step) and reports, per checkpoint, the bytes the saver
// stores: the whole database (SQLite file, Postgres relations with indexes
// and TOAST) and the value blobs alone, next to what storing the message
// list whole at every checkpoint would take.
func BenchmarkChatSavers(b *testing.B) {
	final, naive := chatSizes(b, ChatTurns)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			saver, st := be.open(b)
			g := chatGraph(b, saver, ChatTurns)
			b.ReportAllocs()
			runs := 0
			for b.Loop() {
				if err := runChat(ctx, g, ChatTurns); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ChatTurns), "ns/turn")
			if st == nil {
				return
			}
			u := st.measure(b)
			require.EqualValues(b, runs*(ChatTurns+2), u.checkpoints, "input checkpoint, the start step and one per turn")
			b.ReportMetric(float64(u.total)/float64(u.checkpoints), "db-B/cp")
			b.ReportMetric(float64(u.blobs)/float64(u.checkpoints), "blob-B/cp")
			b.ReportMetric(float64(naive)/float64(ChatTurns+2), "naive-B/cp")
			b.ReportMetric(float64(u.total)/float64(int64(runs)*final), "db/final-list")
			b.Logf("%d chats of %d turns (final list %d B): %v", runs, ChatTurns, final, u)
		})
	}
}

// TestChatSaversSmoke runs a short chat on every saver, so that the
// benchmarks' code stays working, and logs its storage.
func TestChatSaversSmoke(t *testing.T) {
	const turns = 50
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			saver, st := be.open(t)
			start := time.Now()
			require.NoError(t, runChat(t.Context(), chatGraph(t, saver, turns), turns))
			elapsed := time.Since(start)
			if st == nil {
				return
			}
			u := st.measure(t)
			require.EqualValues(t, turns+2, u.checkpoints)
			final, naive := chatSizes(t, turns)
			require.Less(t, u.blobs, naive/2, "appended messages are stored as deltas")
			require.NotEmpty(t, u.tables)
			t.Logf("%d turns in %v (final list %d B, whole copies %d B): %v", turns, elapsed, final, naive, u)
		})
	}
}
