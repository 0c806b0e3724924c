// Package pgdbtest holds the set-up that the tests of the PostgreSQL
// backends share: the test database and a schema of their own per test.
package pgdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv is the environment variable naming the database the tests may
// use; scripts/pg-test.sh starts a throwaway server and sets it.
const URLEnv = "AGENTGRAPH_TEST_POSTGRES_URL"

// URL returns the database the tests may use, or skips the test.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		t.Skip("set AGENTGRAPH_TEST_POSTGRES_URL=postgres://... to run; scripts/pg-test.sh starts a throwaway server")
	}
	return url
}

// FreshSchema returns the name of a new schema, starting with prefix, that
// is dropped when the test ends, so that tests and packages running in
// parallel never share tables.
func FreshSchema(t testing.TB, prefix string) string {
	t.Helper()
	url := URL(t)
	var b [6]byte
	rand.Read(b[:])
	schema := fmt.Sprintf("%s_%d_%s", prefix, os.Getpid(), hex.EncodeToString(b[:]))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}
