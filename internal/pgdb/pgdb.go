package pgdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options are the settings of a connection pool that the options of the
// PostgreSQL backends set. [DefaultOptions] returns the defaults they
// document.
type Options struct {
	// Schema, if not empty, is the schema that holds the tables: it is
	// created if missing and set as search_path on every connection.
	Schema string
	// ConnectTimeout bounds each connection attempt when the URL does not
	// set connect_timeout.
	ConnectTimeout time.Duration
	// MaxConns, if positive, caps the pool's connections, overriding
	// pool_max_conns in the URL.
	MaxConns int32
}

// DefaultOptions returns a connect timeout of 5s, the search_path's schema
// and the URL's pool size.
func DefaultOptions() Options {
	return Options{ConnectTimeout: 5 * time.Second}
}

// Config configures [Open].
type Config struct {
	Options
	// Lock names the transaction-level advisory lock held while migrating,
	// so that concurrent Opens migrate one at a time. Its key is the 64-bit
	// FNV-1a hash of Lock.
	Lock string
	// MigrationsTable is the table that records the applied schema
	// versions.
	MigrationsTable string
	// Migrations are the schema versions in order: Migrations[i] brings a
	// schema from version i to version i+1.
	Migrations [][]string
	// AfterConnect, if set, prepares each connection the pool makes
	// (pgxpool.Config.AfterConnect).
	AfterConnect func(context.Context, *pgx.Conn) error
}

// ConnectError is returned by [Open] when the server cannot be reached or
// refuses the connection. The PostgreSQL backends export it under their
// own names.
type ConnectError struct {
	// Host is the server address, host:port.
	Host string
	// Err is the underlying error.
	Err error
}

// Error names the host and the reason.
func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %v", e.Host, e.Err)
}

// Unwrap returns the underlying error.
func (e *ConnectError) Unwrap() error { return e.Err }

// SchemaVersionError is returned by [Open] for a schema whose recorded
// version is newer than the last of Config.Migrations: it was written by a
// newer version of the program. The PostgreSQL backends export it under
// their own names.
type SchemaVersionError struct {
	// Schema is the schema holding the tables ("" for the search_path
	// default).
	Schema string
	// Found is the schema version recorded in the database.
	Found int
	// Supported is the newest schema version the program knows.
	Supported int
}

// Error describes the mismatch.
func (e *SchemaVersionError) Error() string {
	where := "the database"
	if e.Schema != "" {
		where = "schema " + strconv.Quote(e.Schema)
	}
	return fmt.Sprintf("%s has schema version %d, newer than version %d known to this program; upgrade the program", where, e.Found, e.Supported)
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as accepted by pgxpool) and runs any
// pending migrations of cfg in one transaction. An unreachable server
// fails with a [*ConnectError] (unless ctx is done first), and a schema
// recorded with a version newer than cfg knows with a [*SchemaVersionError].
// Close the pool when done.
func Open(ctx context.Context, url string, cfg Config) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if cfg.Schema != "" {
		pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	}
	pc.AfterConnect = cfg.AfterConnect
	host := net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port)))
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to %s: %w", host, errors.Join(ctx.Err(), err))
		}
		return nil, &ConnectError{Host: host, Err: err}
	}
	if err := Migrate(ctx, pool, cfg); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// lockKey returns the advisory lock key for name.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// Migrate brings the schema of pool's database recorded in
// cfg.MigrationsTable up to len(cfg.Migrations), in one transaction
// holding the advisory lock cfg.Lock (cfg's connection settings are not
// used: the pool is the caller's). A schema recorded with a newer version
// fails with a [*SchemaVersionError].
func Migrate(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	err := migrate(ctx, pool, cfg)
	if _, ok := errors.AsType[*SchemaVersionError](err); ok || err == nil {
		return err
	}
	return fmt.Errorf("migrate: %w", err)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	table, migrations := cfg.MigrationsTable, cfg.Migrations
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(cfg.Lock)); err != nil {
			return err
		}
		if cfg.Schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{cfg.Schema}.Sanitize()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+table).Scan(&cur); err != nil {
			return err
		}
		if cur > len(migrations) {
			return &SchemaVersionError{Schema: cfg.Schema, Found: cur, Supported: len(migrations)}
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", v, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		return nil
	})
}
