package searchlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNewerSchema is wrapped by the error Open returns for a database that a newer
// toolshed has migrated past what this one knows: writing to it could corrupt it.
var ErrNewerSchema = errors.New("searchlog: the database is from a newer toolshed")

// The schema, the same on SQLite and PostgreSQL (see docs/searchlog.md):
//
//	schema_version(version)      one row: the number of migrations applied
//	searches(id, time, source, profile, session, query, mode, results,
//	         latency_us, error, catalog_tokens, result_tokens, subject)
//	calls(id, time, source, profile, session, tool, server, outcome,
//	      duration_us, rank, query, subject)
//	tool_vectors(model, dimensions, prefix, hash, vector, used)
//
// Times are microseconds since the Unix epoch (UTC), durations microseconds, so that
// both databases store and compare them the same way. searches.results is the tools a
// search returned as JSON, [{"tool": "server__tool", "rank": 1}, ...], best first.
// Text columns are never NULL: "" stands for none.
//
// migrations[i] takes a database from version i to i+1. Each runs once, in a
// transaction of its own that also records the new version. Never edit a migration
// that has shipped: add one.
var migrations = [][]string{
	{ // 1: the tables
		`CREATE TABLE searches (
			id {{id}},
			time BIGINT NOT NULL,
			source TEXT NOT NULL,
			profile TEXT NOT NULL,
			session TEXT NOT NULL,
			query TEXT NOT NULL,
			mode TEXT NOT NULL,
			results TEXT NOT NULL,
			latency_us BIGINT NOT NULL,
			error TEXT NOT NULL,
			catalog_tokens INTEGER NOT NULL,
			result_tokens INTEGER NOT NULL
		)`,
		`CREATE INDEX searches_time ON searches (time)`,
		`CREATE TABLE calls (
			id {{id}},
			time BIGINT NOT NULL,
			source TEXT NOT NULL,
			profile TEXT NOT NULL,
			session TEXT NOT NULL,
			tool TEXT NOT NULL,
			server TEXT NOT NULL,
			outcome TEXT NOT NULL,
			duration_us BIGINT NOT NULL,
			rank INTEGER NOT NULL,
			query TEXT NOT NULL
		)`,
		`CREATE INDEX calls_time ON calls (time)`,
	},
	{ // 2: what Evidence reads: successful calls that a search led to
		`CREATE INDEX calls_evidence ON calls (tool, query, time) WHERE outcome = 'ok' AND query <> ''`,
	},
	{ // 3: tool vectors (see vectors.go), shared by the replicas of one database
		`CREATE TABLE tool_vectors (
			model TEXT NOT NULL,
			dimensions INTEGER NOT NULL,
			prefix TEXT NOT NULL,
			hash {{bytes}} NOT NULL,
			vector {{bytes}} NOT NULL,
			used BIGINT NOT NULL,
			PRIMARY KEY (model, dimensions, prefix, hash)
		)`,
		`CREATE INDEX tool_vectors_used ON tool_vectors (used)`,
	},
	{ // 4: the OAuth subject of a search's or a call's session ('' for the rows before)
		`ALTER TABLE searches ADD COLUMN subject TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE calls ADD COLUMN subject TEXT NOT NULL DEFAULT ''`,
	},
}

// SchemaVersion is the schema version this toolshed writes.
const SchemaVersion = 4

// migrate brings st's schema up to version want (SchemaVersion but in tests),
// one migration per transaction, and refuses a database newer than that.
func migrate(ctx context.Context, st store, want int) error {
	for {
		done := false
		err := st.tx(ctx, func(q querier) error {
			if err := q.lock(ctx); err != nil {
				return err
			}
			if err := q.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
				return err
			}
			v, err := version(ctx, q)
			if err != nil {
				return err
			}
			switch {
			case v > want:
				return fmt.Errorf("%w: %s has schema version %d and this toolshed knows up to %d; upgrade toolshed, or name another database", ErrNewerSchema, st.where(), v, want)
			case v == want:
				done = true
				return nil
			}
			for _, stmt := range migrations[v] {
				stmt = strings.NewReplacer("{{id}}", st.idColumn(), "{{bytes}}", st.bytesColumn()).Replace(stmt)
				if err := q.exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", v+1, err)
				}
			}
			if err := q.exec(ctx, `DELETE FROM schema_version`); err != nil {
				return err
			}
			return q.exec(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v+1)
		})
		if err != nil || done {
			return err
		}
	}
}

// version reads the schema version: 0 for a database toolshed never wrote to.
func version(ctx context.Context, q querier) (int, error) {
	rows, err := q.query(ctx, `SELECT version FROM schema_version`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := 0
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
		v = max(v, n)
	}
	return v, rows.Err()
}

// store is a database the log writes to: SQLite or PostgreSQL. The SQL the log sends
// is the same for both, with ? placeholders.
type store interface {
	// tx runs fn in one transaction, committed when fn returns nil.
	tx(ctx context.Context, fn func(querier) error) error
	// query runs a read outside a transaction.
	query(ctx context.Context, sql string, args ...any) (rows, error)
	// check reports whether the store is still the one opened, reopening it if it
	// can (a SQLite file deleted while serving); it returns a note when it did.
	check(ctx context.Context) (reopened bool, err error)
	// where names the database in messages, without secrets.
	where() string
	// idColumn is the type of an auto-numbered primary key.
	idColumn() string
	// bytesColumn is the type of a column of bytes.
	bytesColumn() string
	close()
}

// querier runs statements in a transaction.
type querier interface {
	exec(ctx context.Context, sql string, args ...any) error
	// execMany runs sql once for each argument list.
	execMany(ctx context.Context, sql string, args [][]any) error
	query(ctx context.Context, sql string, args ...any) (rows, error)
	// lock serializes migrations across processes sharing the database.
	lock(ctx context.Context) error
}

// rows is a result set of either database.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}
