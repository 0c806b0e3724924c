package coder_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The library imports no database driver: the program that opens the
// store and the checkpointer does.
func TestPackageLinksNoDatabaseDriver(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		for _, driver := range []string{"modernc.org/sqlite", "github.com/mattn/go-sqlite3", "github.com/jackc/pgx", "github.com/lib/pq"} {
			require.False(t, strings.HasPrefix(dep, driver), "links %s", dep)
		}
	}
}
