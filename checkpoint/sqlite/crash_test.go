//go:build unix

package sqlite_test

// Crash test: a child process (this test binary, re-executed) runs a
// checkpointed graph on a SQLite file and dies of SIGKILL — between nodes
// at a random moment, inside a node after its side effect, or inside a
// saver write transaction — with each durability mode; the parent then
// resumes the thread in-process and checks the result against an
// uninterrupted run. internal/durabilitytest (crash.go) holds the test and
// its invariants; checkpoint/postgres runs the same on PostgreSQL.
//
// go test ./checkpoint/sqlite/ -run '^TestCrashResume$' -crash.trials=200
// runs more trials (that many with DurabilitySync, a quarter as many with
// each of the other modes, the kill points in turn); -crash.seed replays a
// logged seed. Trials run in parallel (-test.parallel at a time). At least
// 500 trials over both backends and every mode and kill point:
//
//	source /tmp/pgenv.sh   # or scripts/pg-test.sh: AGENTGRAPH_TEST_POSTGRES_URL
//	go test ./checkpoint/sqlite/ ./checkpoint/postgres/ -run '^TestCrashResume$' -crash.trials=170 -timeout=1h

import (
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
)

func TestCrashResume(t *testing.T) {
	durabilitytest.CrashResume(t, durabilitytest.SQLite, durabilitytest.CrashFlags())
}
