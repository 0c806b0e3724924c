package main

// The program registers the database/sql drivers its goals and its runs
// store open (package goals, a library, imports none): sql-benchmark goals
// on SQLite files and on PostgreSQL.
import (
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx": sql.driver postgres
	_ "modernc.org/sqlite"             // driver "sqlite": sql.driver sqlite
)
