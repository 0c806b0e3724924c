// Command serverload puts the graph server (package server) on PostgreSQL
// under load and faults: threads × runs driven over HTTP (loopback)
// through several server processes sharing one database, one of which is
// killed with SIGKILL mid-run. It checks that every run finished exactly
// once — none lost, none executed by two processes at the same time, each
// thread's runs applied once each and in order — and reports throughput
// and latency percentiles.
//
//	eval "$(scripts/pg-test.sh start)"
//	go run ./bench/serverload -threads 1000 -runs 5 -procs 3
//
// The server processes are this program again (it re-executes itself).
// Every node execution is recorded in a side table with the database's
// clock, so that the check of "never two processes at once" compares
// times from one clock. See bench/SERVERLOAD.md.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
	"github.com/agentgraph/agentgraph/state"
)

// serveEnv, when set, makes the program a server process; it holds the
// serveConfig as JSON.
const serveEnv = "AGENTGRAPH_SERVERLOAD_SERVE"

// Config is one load run.
type Config struct {
	URL         string        // PostgreSQL
	Threads     int           // threads
	Runs        int           // runs per thread, queued with multitask_strategy enqueue
	Procs       int           // server processes
	Workers     int           // runs each process executes at once
	Clients     int           // threads driven at once
	NodeDelay   time.Duration // each of the graph's two nodes sleeps this long
	LeaseTTL    time.Duration // run leases (server) and thread leases (graph)
	KillAt      float64       // kill a process executing a run once this fraction of the runs ended (0: never)
	Keep        bool          // keep the schema
	Log         io.Writer     // progress
	childBinary string        // the executable of the server processes
}

// Report is what a load run measured and checked.
type Report struct {
	Runs, Threads, Procs int
	Wall                 time.Duration
	Throughput           float64 // runs per second
	P50, P95, P99, Max   time.Duration
	// ExecP50 and ExecP95 are of a run's execution alone: from its first
	// node's start to its last node's end (for a run taken over, from the
	// start of its first attempt).
	ExecP50, ExecP95 time.Duration
	Killed           bool
	// KilledRunsTakenOver counts the runs claimed more than once: taken
	// over from the killed process or from one that could not renew its
	// lease in time, or released after a transient fault.
	KilledRunsTakenOver int
	Succeeded           int
	NotSucceeded        []string // runs that did not end "success"
	// Causes counts the runs that did not succeed by cause: their status,
	// the error's name and its message with ids and numbers masked.
	Causes map[string]int
	// DriveErrors counts the driver's requests that failed for good, by
	// cause (the same masking).
	DriveErrors     map[string]int
	Lost            int      // runs still pending or running
	BadThreads      []string // threads whose state is not their runs, once each, in order
	Overlaps        []string // a thread's nodes executed by two processes at once
	NodeExecutions  int
	ReExecutedNodes int // node executions repeated after the kill (at-least-once nodes)
	Retries         int64
}

func main() {
	if cfg := os.Getenv(serveEnv); cfg != "" {
		if err := serve(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "serverload serve:", err)
			os.Exit(1)
		}
		return
	}
	var c Config
	flag.StringVar(&c.URL, "db", os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL"), "PostgreSQL URL (default $AGENTGRAPH_TEST_POSTGRES_URL)")
	flag.IntVar(&c.Threads, "threads", 1000, "threads")
	flag.IntVar(&c.Runs, "runs", 5, "runs per thread")
	flag.IntVar(&c.Procs, "procs", 3, "server processes")
	flag.IntVar(&c.Workers, "workers", 16, "runs each process executes at once")
	flag.IntVar(&c.Clients, "clients", 100, "threads driven at once")
	flag.DurationVar(&c.NodeDelay, "node-delay", 10*time.Millisecond, "time each node sleeps")
	flag.DurationVar(&c.LeaseTTL, "lease", 3*time.Second, "lease time to live")
	flag.Float64Var(&c.KillAt, "kill-at", 0.3, "SIGKILL a process executing a run once this fraction of the runs ended (0: never)")
	flag.BoolVar(&c.Keep, "keep", false, "keep the database schema")
	flag.Parse()
	c.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := Run(ctx, c)
	if r != nil {
		r.print(os.Stdout, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(1)
	}
}

func (r *Report) print(w io.Writer, c Config) {
	fmt.Fprintf(w, "threads × runs        %d × %d = %d runs, %d processes × %d workers, %d clients, nodes sleep %v, lease %v\n",
		r.Threads, c.Runs, r.Runs, r.Procs, c.Workers, c.Clients, c.NodeDelay, c.LeaseTTL)
	fmt.Fprintf(w, "wall time             %v\n", r.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput            %.1f runs/s\n", r.Throughput)
	fmt.Fprintf(w, "latency (create→end)  p50 %v  p95 %v  p99 %v  max %v\n", r.P50.Round(time.Millisecond), r.P95.Round(time.Millisecond),
		r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond))
	fmt.Fprintf(w, "execution (nodes)     p50 %v  p95 %v\n", r.ExecP50.Round(time.Millisecond), r.ExecP95.Round(time.Millisecond))
	fmt.Fprintf(w, "killed a process      %v (runs claimed again: %d; node executions repeated: %d of %d)\n", r.Killed, r.KilledRunsTakenOver,
		r.ReExecutedNodes, r.NodeExecutions)
	fmt.Fprintf(w, "client retries        %d\n", r.Retries)
	fmt.Fprintf(w, "succeeded             %d of %d\n", r.Succeeded, r.Runs)
	fmt.Fprintf(w, "lost (pending/running) %d\n", r.Lost)
	fmt.Fprintf(w, "not success           %d %v\n", len(r.NotSucceeded), head(r.NotSucceeded))
	printCauses(w, "  by cause", r.Causes)
	fmt.Fprintf(w, "requests failed       %d\n", total(r.DriveErrors))
	printCauses(w, "  by cause", r.DriveErrors)
	fmt.Fprintf(w, "threads not applied once each, in order  %d %v\n", len(r.BadThreads), head(r.BadThreads))
	fmt.Fprintf(w, "overlapping executions %d %v\n", len(r.Overlaps), head(r.Overlaps))
}

func head(s []string) []string { return s[:min(len(s), 5)] }

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// printCauses prints the causes, the most frequent first.
func printCauses(w io.Writer, title string, m map[string]int) {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
	for _, k := range keys {
		fmt.Fprintf(w, "%s  %4d  %s\n", title, m[k], k)
	}
}

var (
	quotedRE = regexp.MustCompile(`"[^"]*"`)
	uuidRE   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	numberRE = regexp.MustCompile(`[0-9]+`)
)

// cause masks the quoted names, ids and numbers of an error's message, so that the
// errors of one cause count together.
func cause(msg string) string {
	msg = quotedRE.ReplaceAllString(msg, `"…"`)
	msg = uuidRE.ReplaceAllString(msg, "<id>")
	msg = numberRE.ReplaceAllString(msg, "N")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// OK reports whether every check passed.
func (r *Report) OK() bool {
	return r.Succeeded == r.Runs && r.Lost == 0 && len(r.NotSucceeded) == 0 && len(r.BadThreads) == 0 && len(r.Overlaps) == 0
}

// ---- the server processes ----

type serveConfig struct {
	URL, Schema, Name string
	Workers           int
	NodeDelay, Lease  time.Duration
}

// State is the graph's state: the run's thread and seq, and the steps of
// every run so far.
type State struct {
	Thread state.Value[string]  `json:"thread"`
	Seq    state.Value[int]     `json:"seq"`
	Steps  state.Append[string] `json:"steps"`
}

func poolFor(ctx context.Context, url, schema, app string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = maxConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

// serve runs one server process until SIGTERM, printing its address on
// stdout.
func serve(raw string) error {
	var c serveConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := poolFor(ctx, c.URL, c.Schema, "serverload-"+c.Name, int32(c.Workers+8))
	if err != nil {
		return err
	}
	defer pool.Close()
	b, err := postgres.New(ctx, pool)
	if err != nil {
		return err
	}
	defer b.Close() // its LISTEN connection, before the pool
	saver, err := pgsaver.Open(ctx, c.URL, pgsaver.WithSchema(c.Schema), pgsaver.WithMaxConns(int32(c.Workers+4)))
	if err != nil {
		return err
	}
	defer saver.Close()
	pid := os.Getpid()
	node := func(name string) func(context.Context, State) (State, error) {
		return func(ctx context.Context, s State) (State, error) {
			// Recorded whether or not the run is cancelled meanwhile: a
			// start recorded by a query whose answer the cancel lost would
			// be an execution without an end.
			var id int64
			if err := pool.QueryRow(context.WithoutCancel(ctx), `INSERT INTO serverload_execs (thread, seq, node, pid, started)
				VALUES ($1, $2, $3, $4, clock_timestamp()) RETURNING id`, s.Thread.Get(), s.Seq.Get(), name, pid).Scan(&id); err != nil {
				return State{}, err
			}
			var err error
			select {
			case <-time.After(c.NodeDelay):
			case <-ctx.Done():
				err = ctx.Err()
			}
			// Recorded even when cancelled: only a killed process leaves
			// an execution without an end.
			if _, uerr := pool.Exec(context.WithoutCancel(ctx), `UPDATE serverload_execs SET ended = clock_timestamp() WHERE id = $1`, id); uerr != nil {
				return State{}, uerr
			}
			if err != nil {
				return State{}, err
			}
			return State{Steps: state.Items(fmt.Sprintf("%d%s", s.Seq.Get(), name))}, nil
		}
	}
	gb := graph.New[State]()
	gb.AddNode("a", node("a"))
	gb.AddNode("b", node("b"))
	gb.AddEdge(graph.Start, "a")
	gb.AddEdge("a", "b")
	gb.AddEdge("b", graph.End)
	g, err := gb.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(c.Lease))
	if err != nil {
		return err
	}
	srv, err := server.New(server.Graph("load", g), server.WithCheckpointer(saver), server.WithBackend(b),
		server.WithoutAuthLoopbackOnly(), server.WithWorkers(c.Workers), server.WithRunLeaseTTL(c.Lease),
		server.WithHolder(fmt.Sprintf("%s pid %d", c.Name, pid)), server.WithPollInterval(20*time.Millisecond))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() { _ = hs.Serve(ln) }()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return hs.Shutdown(sctx)
}

// ---- the driver ----

type child struct {
	name string
	cmd  *exec.Cmd
	addr string
	dead atomic.Bool
}

func startChild(ctx context.Context, bin string, sc serveConfig, log io.Writer) (*child, error) {
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin)
	if strings.HasSuffix(bin, ".test") {
		cmd.Args = append(cmd.Args, "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), serveEnv+"="+string(raw), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("process %s did not start: %w", sc.Name, err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("process %s said %q", sc.Name, line)
	}
	return &child{name: sc.Name, cmd: cmd, addr: "http://" + addr}, nil
}

// client sends requests to the live processes, retrying on another one
// when a process does not answer.
type client struct {
	procs   []*child
	http    *http.Client
	retries atomic.Int64
	// settled waits until the database has let go of a dead process:
	// until then a transaction it had sent may still commit.
	settled func(ctx context.Context, p *child) error
}

var errGone = errors.New("no live process")

// do sends the request to process i (or the next live one) and decodes a
// 2xx JSON answer into out.
func (c *client) do(ctx context.Context, i int, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return err
		}
	}
	for try := 0; try < 10*len(c.procs); try++ {
		p := c.procs[(i+try)%len(c.procs)]
		if p.dead.Load() {
			continue
		}
		status, b, err := c.send(ctx, p, method, path, raw)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || status >= 500 {
			c.retries.Add(1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return decode(method, path, status, b, out)
	}
	return fmt.Errorf("%s %s: %w", method, path, errGone)
}

// send sends one request with the JSON body raw to p and reads the
// answer; a status of 0 with an error is a request that got no answer.
func (c *client) send(ctx context.Context, p *child, method, path string, raw []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.addr+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// decode turns a non-5xx answer into out (when not nil), or an error for
// a status of 300 or more.
func decode(method, path string, status int, b []byte, out any) error {
	if status >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type runRef struct {
	RunID    string         `json:"run_id"`
	Metadata map[string]any `json:"metadata"`
}

// createRun queues run seq of thread tid. A POST whose answer was lost
// may have created the run: the retry looks for it first, so that a run
// is created once.
func (c *client) createRun(ctx context.Context, i int, tid string, seq int) (string, error) {
	body := map[string]any{"assistant_id": "load", "input": map[string]any{"thread": tid, "seq": seq},
		"multitask_strategy": "enqueue", "metadata": map[string]any{"seq": seq}}
	for try := 0; ; try++ {
		if try > 0 {
			var runs []runRef
			if err := c.do(ctx, i+try, "GET", "/threads/"+tid+"/runs?limit=100", nil, &runs); err != nil {
				return "", err
			}
			for _, r := range runs {
				if n, _ := r.Metadata["seq"].(float64); int(n) == seq {
					return r.RunID, nil
				}
			}
		}
		var r runRef
		p, err := c.postOnce(ctx, i+try, "/threads/"+tid+"/runs", body, &r)
		if err == nil {
			return r.RunID, nil
		}
		if try >= 5 || ctx.Err() != nil || !errors.Is(err, errLost) {
			return "", err
		}
		if p.dead.Load() && c.settled != nil {
			// The process died with the POST: the run it was creating
			// may commit after the answer was lost, so it is looked for
			// only once the database ended that process's sessions.
			if err := c.settled(ctx, p); err != nil {
				return "", err
			}
		}
		c.retries.Add(1)
	}
}

var errLost = errors.New("answer lost")

// postOnce sends one POST to process i (or the next live one), and
// returns the process asked: a lost answer is errLost, not retried.
func (c *client) postOnce(ctx context.Context, i int, path string, body, out any) (*child, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	for try := range len(c.procs) {
		p := c.procs[(i+try)%len(c.procs)]
		if p.dead.Load() {
			continue
		}
		status, b, err := c.send(ctx, p, "POST", path, raw)
		if status == 0 && err != nil {
			return p, fmt.Errorf("%w: %w", errLost, err)
		}
		if err != nil || status >= 500 {
			return p, fmt.Errorf("%w: %d %s %v", errLost, status, b, err)
		}
		return p, decode("POST", path, status, b, out)
	}
	return nil, errGone
}

// Run creates a schema, starts the server processes, drives the load,
// kills a process, checks the outcome and reports.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.URL == "" {
		return nil, errors.New("no database: set AGENTGRAPH_TEST_POSTGRES_URL or -db (scripts/pg-test.sh starts one)")
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	bin := c.childBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	schema := fmt.Sprintf("serverload_%d_%s", os.Getpid(), hex.EncodeToString(rb[:]))
	pool, err := poolFor(ctx, c.URL, schema, "serverload-driver", 8)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	admin, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, err
	}
	if !c.Keep {
		defer func() {
			_, _ = admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		}()
	}
	if _, err := postgres.New(ctx, pool); err != nil {
		return nil, err
	}
	saver, err := pgsaver.Open(ctx, c.URL, pgsaver.WithSchema(schema)) // migrate once, before the processes race to
	if err != nil {
		return nil, err
	}
	saver.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE serverload_execs (id bigserial PRIMARY KEY, thread text NOT NULL, seq int NOT NULL,
		node text NOT NULL, pid int NOT NULL, started timestamptz NOT NULL, ended timestamptz)`); err != nil {
		return nil, err
	}

	pctx, stopProcs := context.WithCancel(context.Background())
	defer stopProcs()
	cl := &client{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Clients}, Timeout: 5 * time.Minute}}
	cl.settled = func(ctx context.Context, p *child) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for {
			var n int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "serverload-"+p.name).Scan(&n)
			if err != nil {
				return fmt.Errorf("waiting for the sessions of dead process %s to end: %w", p.name, err)
			}
			if n == 0 {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i := range c.Procs {
		ch, err := startChild(pctx, bin, serveConfig{URL: c.URL, Schema: schema, Name: fmt.Sprintf("p%d", i+1), Workers: c.Workers,
			NodeDelay: c.NodeDelay, Lease: c.LeaseTTL}, c.Log)
		if err != nil {
			return nil, err
		}
		cl.procs = append(cl.procs, ch)
	}
	defer func() {
		for _, p := range cl.procs {
			if !p.dead.Load() {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, p := range cl.procs {
			if !p.dead.Load() {
				_ = p.cmd.Wait()
			}
		}
	}()
	fmt.Fprintf(c.Log, "serverload: %d processes up on schema %s\n", c.Procs, schema)

	total := c.Threads * c.Runs
	var ended atomic.Int64
	var killedPID atomic.Int64
	var killedAt time.Time // by the database's clock, once the victim is dead
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			victim := cl.procs[0]
			// Mid-run: the victim is a process executing a run now, if
			// one is found within a second.
			for range 100 {
				var holder string
				err := pool.QueryRow(ctx, `SELECT holder FROM agentgraph_server_runs WHERE status = 'running' AND holder IS NOT NULL LIMIT 1`).Scan(&holder)
				if err == nil {
					if i := slices.IndexFunc(cl.procs, func(p *child) bool { return strings.HasPrefix(holder, p.name+" ") }); i >= 0 {
						victim = cl.procs[i]
						break
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			victim.dead.Store(true)
			killedPID.Store(int64(victim.cmd.Process.Pid))
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			_ = victim.cmd.Wait()
			if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&killedAt); err != nil {
				killedAt = time.Now()
			}
			fmt.Fprintf(c.Log, "serverload: SIGKILL %s (pid %d) after %d of %d runs ended\n", victim.name, victim.cmd.Process.Pid, ended.Load(), total)
		})
	}

	lat := make([]time.Duration, 0, total)
	var latMu sync.Mutex
	errs := make(chan error, c.Threads)
	sem := make(chan struct{}, c.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for ti := range c.Threads {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var th struct {
				ThreadID string `json:"thread_id"`
			}
			// The thread's id is the driver's and an existing thread is
			// not an error, so that a POST whose answer was lost with a
			// killed process is retried without making a second thread.
			body := map[string]any{"thread_id": uuid.NewString(), "if_exists": "do_nothing", "metadata": map[string]any{"load": ti}}
			if err := cl.do(ctx, ti, "POST", "/threads", body, &th); err != nil {
				errs <- err
				return
			}
			ids := make([]string, c.Runs)
			created := make([]time.Time, c.Runs)
			for j := range c.Runs {
				created[j] = time.Now()
				id, err := cl.createRun(ctx, ti+j, th.ThreadID, j)
				if err != nil {
					errs <- err
					return
				}
				ids[j] = id
			}
			for j, id := range ids {
				if err := cl.do(ctx, ti+j+1, "GET", "/threads/"+th.ThreadID+"/runs/"+id+"/join", nil, nil); err != nil {
					errs <- err
					return
				}
				d := time.Since(created[j])
				latMu.Lock()
				lat = append(lat, d)
				latMu.Unlock()
				if n := ended.Add(1); c.KillAt > 0 && float64(n) >= c.KillAt*float64(total) {
					kill()
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	var driveErrs []error
	r := &Report{Runs: total, Threads: c.Threads, Procs: c.Procs, Wall: wall, Retries: cl.retries.Load(), Killed: killedPID.Load() != 0,
		DriveErrors: map[string]int{}}
	for err := range errs {
		driveErrs = append(driveErrs, err)
		r.DriveErrors[cause(err.Error())]++
	}
	r.Throughput = float64(len(lat)) / wall.Seconds()
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		pct := func(p float64) time.Duration { return lat[min(n-1, int(p*float64(n)))] }
		r.P50, r.P95, r.P99, r.Max = pct(0.50), pct(0.95), pct(0.99), lat[n-1]
	}
	if err := check(ctx, pool, c, r, killedPID.Load(), killedAt); err != nil {
		return r, err
	}
	if err := errors.Join(driveErrs...); err != nil {
		return r, fmt.Errorf("driving the load: %w", err)
	}
	if !r.OK() {
		return r, errors.New("a check failed (see the report)")
	}
	return r, nil
}

// check reads the outcome from the database.
func check(ctx context.Context, pool *pgxpool.Pool, c Config, r *Report, killedPID int64, killedAt time.Time) error {
	rows, err := pool.Query(ctx, `SELECT run_id, status, attempt, COALESCE(result->'__error__'->>'error', ''),
		COALESCE(result->'__error__'->>'message', '') FROM agentgraph_server_runs`)
	if err != nil {
		return err
	}
	n := 0
	r.Causes = map[string]int{}
	for rows.Next() {
		var id, status, errName, errMsg string
		var attempt int
		if err := rows.Scan(&id, &status, &attempt, &errName, &errMsg); err != nil {
			return err
		}
		if status != "success" {
			r.Causes[cause(status+" "+errName+": "+errMsg)]++
		}
		n++
		switch status {
		case "success":
			r.Succeeded++
		case "pending", "running":
			r.Lost++
		default:
			r.NotSucceeded = append(r.NotSucceeded, id+" "+status)
		}
		if attempt > 1 {
			r.KilledRunsTakenOver++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.Lost += r.Runs - n // runs the driver made that are missing

	// Each thread's state: every run's two steps, once each, in order.
	want := make([]string, 0, 2*c.Runs)
	for j := range c.Runs {
		want = append(want, fmt.Sprintf("%da", j), fmt.Sprintf("%db", j))
	}
	rows, err = pool.Query(ctx, `SELECT thread_id, COALESCE(vals->'steps', '[]') FROM agentgraph_server_threads`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var tid string
		var steps []string
		if err := rows.Scan(&tid, &steps); err != nil {
			return err
		}
		if !slices.Equal(steps, want) {
			r.BadThreads = append(r.BadThreads, fmt.Sprintf("%s %v", tid, steps))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}

	// Node executions: per thread, no two overlap. An execution the kill
	// cut short has no end: it is counted as running until the victim
	// was dead, the most it could have.
	type exec struct {
		seq            int
		node           string
		pid            int64
		started, ended time.Time
		unfinished     bool
	}
	byThread := map[string][]exec{}
	rows, err = pool.Query(ctx, `SELECT thread, seq, node, pid, started, ended FROM serverload_execs`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var tid string
		var e exec
		var ended *time.Time
		if err := rows.Scan(&tid, &e.seq, &e.node, &e.pid, &e.started, &ended); err != nil {
			return err
		}
		e.ended = killedAt
		if ended != nil {
			e.ended = *ended
		} else {
			e.unfinished = true
		}
		byThread[tid] = append(byThread[tid], e)
		r.NodeExecutions++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var execs []time.Duration
	rows, err = pool.Query(ctx, `SELECT max(ended) - min(started) FROM serverload_execs WHERE ended IS NOT NULL GROUP BY thread, seq`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var d time.Duration
		if err := rows.Scan(&d); err != nil {
			return err
		}
		execs = append(execs, d)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n := len(execs); n > 0 {
		slices.Sort(execs)
		r.ExecP50, r.ExecP95 = execs[n/2], execs[min(n-1, int(0.95*float64(n)))]
	}
	for tid, es := range byThread {
		sort.Slice(es, func(i, j int) bool { return es[i].started.Before(es[j].started) })
		seen := map[string]bool{}
		for i, e := range es {
			key := fmt.Sprintf("%d%s", e.seq, e.node)
			if seen[key] {
				r.ReExecutedNodes++
			}
			seen[key] = true
			if e.unfinished && e.pid != killedPID {
				// Only the killed process leaves executions unfinished.
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: %s by pid %d never ended", tid, key, e.pid))
				continue
			}
			for _, f := range es[i+1:] {
				if f.started.Before(e.ended) {
					r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: %d%s (pid %d) and %d%s (pid %d)", tid, e.seq, e.node, e.pid, f.seq, f.node, f.pid))
				}
			}
		}
	}
	return nil
}
