package goals

// The test binary is the program: like examples/retrai, it registers the
// database/sql drivers the sql-benchmark goal opens.
import (
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)
