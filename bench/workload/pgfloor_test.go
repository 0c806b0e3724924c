package workload_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// BenchmarkPostgresFloor measures, in one run, what a durable (sync) W5
// step costs on the PostgreSQL saver and the floor under it: a raw pgx
// loop doing what a step must do at least — insert the step's checkpoint
// row and its one blob, shaped as the saver's (same columns, same sizes),
// in one transaction sent as one pipelined batch (one round trip, no
// BEGIN or COMMIT: the server commits the batch at its Sync), on one
// connection with pgx's cached prepared statements, into the saver's own
// tables (a schema migrated by postgres.Open, every index included). The
// raw loop takes no lock, checks nothing and has no graph to run: the
// saver's cost per step over the floor's is everything else, client and
// server. "saver/raw" is that ratio, reported on the saver's line, over
// the last raw run before it (with -count, the raw runs come first).
//
// When the server runs on this machine, both lines also report the CPU
// time per step, read from /proc, of the server's client backends other
// than the benchmark's own sampling connection ("backend-ns/step") and of
// all its processes (WAL writer and the rest too: "server-ns/step"): the
// server's work, which the machine's load distorts less than the wall
// time. Use a server of the benchmark's own (scripts/pg-test.sh): another
// client's backends would count too.
//
//	eval "$(scripts/pg-test.sh start)"
//	go test -run '^$' -bench PostgresFloor -benchtime=10x -count=3 ./bench/workload/
func BenchmarkPostgresFloor(b *testing.B) {
	var raw, rawBackend float64 // ns per step of the raw run, for the saver's ratio
	b.Run("raw", func(b *testing.B) {
		url, schema, probe := pgSchema(b)
		s, err := postgres.Open(ctx, url, postgres.WithSchema(schema)) // the saver's tables and indexes
		require.NoError(b, err)
		require.NoError(b, s.Close())
		cfg, err := pgx.ParseConfig(url)
		require.NoError(b, err)
		cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(b, err)
		b.Cleanup(func() { conn.Close(context.Background()) })
		cpu := newPGServerCPU(ctx, probe)
		before := cpu.sample(b)
		run := 0
		b.ReportAllocs()
		for b.Loop() {
			run++
			if err := rawW5(ctx, conn, "raw-"+strconv.Itoa(run)); err != nil {
				b.Fatal(err)
			}
		}
		steps := float64(b.N * workload.W5Steps)
		raw = float64(b.Elapsed().Nanoseconds()) / steps
		b.ReportMetric(raw, "ns/step")
		rawBackend = cpu.report(b, before, steps)
	})
	b.Run("saver", func(b *testing.B) {
		url, schema, probe := pgSchema(b)
		s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
		require.NoError(b, err)
		b.Cleanup(func() { s.Close() })
		g, err := workload.W5(s)
		require.NoError(b, err)
		cpu := newPGServerCPU(ctx, probe)
		before := cpu.sample(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := workload.RunW5(ctx, g); err != nil {
				b.Fatal(err)
			}
		}
		steps := float64(b.N * workload.W5Steps)
		perStep := float64(b.Elapsed().Nanoseconds()) / steps
		b.ReportMetric(perStep, "ns/step")
		backend := cpu.report(b, before, steps)
		if raw > 0 {
			b.ReportMetric(perStep/raw, "saver/raw")
		}
		if rawBackend > 0 && backend > 0 {
			b.ReportMetric(backend/rawBackend, "backend-saver/raw")
		}
	})
}

// rawW5 writes what a sync W5 run on thread writes at its 1,000 steps,
// each step one pipelined batch: the blob of the counter's new value and
// the checkpoint row, with the columns the saver gives them (a 32-digit
// hexadecimal ID growing with time, the metadata and versions as JSON, the
// frontier and shape the graph's).
func rawW5(ctx context.Context, conn *pgx.Conn, thread string) error {
	const (
		insertBlob = `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
			VALUES ($1, '', 'Counter', $2, NULL, 0, $3, $4, $5)`
		insertCheckpoint = `INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
			VALUES ($1, '', $2, $3, $4, $5, $6, $7, 'f386cb6e69b248d0')`
	)
	frontier := []byte(`{"nodes":["inc"],"last":["inc"]}`)
	parent := ""
	start := time.Now().UnixNano()
	for step := range workload.W5Steps {
		id := fmt.Sprintf("%016x%016x", start+int64(step), step)
		version := int64(1)<<34 + int64(step)
		value := []byte(strconv.Itoa(step + 1))
		hash := sha256.Sum256(value)
		meta := `{"step": ` + strconv.Itoa(step+1) + `, "source": "loop", "parents": {}}`
		versions := `{"Counter": ` + strconv.FormatInt(version, 10) + `}`
		b := &pgx.Batch{}
		b.Queue(insertBlob, thread, version, int64(len(value)), hash[:], value)
		b.Queue(insertCheckpoint, thread, id, parent, time.Now(), meta, versions, frontier)
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("raw W5 step %d: %w", step, err)
		}
		parent = id
	}
	return nil
}

// pgServerCPU reads the CPU time of a PostgreSQL server's processes from
// /proc (their schedstat: nanoseconds on a CPU), when the server runs on
// this machine. A nil *pgServerCPU samples nothing.
type pgServerCPU struct {
	conn       *pgx.Conn // the sampler's connection, whose backend is left out
	self       int       // its backend's process ID
	postmaster int
}

// cpuSample is the CPU time of each process of the server, and the
// process IDs of its client backends other than the sampler's.
type cpuSample struct {
	cpu     map[int]time.Duration
	clients []int
}

// newPGServerCPU returns a sampler for conn's server, or nil when the
// server's processes cannot be read here (a server on another machine or
// in another PID namespace, or no /proc/PID/schedstat).
func newPGServerCPU(ctx context.Context, conn *pgx.Conn) *pgServerCPU {
	var self int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&self); err != nil {
		return nil
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(self) + "/cmdline")
	if err != nil || !strings.HasPrefix(string(cmd), "postgres") {
		return nil // not this backend: the server is elsewhere
	}
	postmaster, err := parentPID(self)
	if err != nil {
		return nil
	}
	if _, err := schedCPU(self); err != nil {
		return nil
	}
	return &pgServerCPU{conn: conn, self: self, postmaster: postmaster}
}

// sample reads the CPU time of every process of the server.
func (c *pgServerCPU) sample(tb testing.TB) cpuSample {
	if c == nil {
		return cpuSample{}
	}
	rows, err := c.conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)
	require.NoError(tb, err)
	clients, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(tb, err)
	s := cpuSample{cpu: map[int]time.Duration{}, clients: clients}
	entries, err := os.ReadDir("/proc")
	require.NoError(tb, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, err := parentPID(pid); err != nil || ppid != c.postmaster {
			continue // not the server's, or gone
		}
		if d, err := schedCPU(pid); err == nil {
			s.cpu[pid] = d
		}
	}
	if d, err := schedCPU(c.postmaster); err == nil {
		s.cpu[c.postmaster] = d
	}
	return s
}

// report reports the server's CPU time per step since before, over steps
// steps, and returns the client backends' (0 when c is nil).
func (c *pgServerCPU) report(b *testing.B, before cpuSample, steps float64) float64 {
	if c == nil {
		return 0
	}
	after := c.sample(b)
	var backends, server time.Duration
	for pid, d := range after.cpu {
		server += d - before.cpu[pid] // a process started since counts from 0
	}
	for _, pid := range after.clients {
		backends += after.cpu[pid] - before.cpu[pid]
	}
	perStep := float64(backends.Nanoseconds()) / steps
	b.ReportMetric(perStep, "backend-ns/step")
	b.ReportMetric(float64(server.Nanoseconds())/steps, "server-ns/step")
	return perStep
}

// parentPID returns the parent of process pid, from /proc/PID/stat.
func parentPID(pid int) (int, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(fields[1])
}

// schedCPU returns the time process pid has spent on a CPU, from
// /proc/PID/schedstat.
func schedCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("empty schedstat")
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err
}
