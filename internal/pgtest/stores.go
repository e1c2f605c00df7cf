package pgtest

import (
	"path/filepath"
	"testing"
)

// Store is a kind of search-log database a test runs on.
type Store struct {
	Name string // "sqlite" or "postgres"
	// DSN names a new, empty database of the kind.
	DSN func(t *testing.T) string
}

// Stores returns a SQLite file and, where PostgreSQL is installed (always in CI), a
// database of a PostgreSQL server started for t: what every test of something kept in
// the search log's store runs on.
func Stores(t *testing.T) []Store {
	sqlite := Store{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "log.db") }}
	if !Installed() && !Required() {
		t.Log("PostgreSQL is not installed: tested on SQLite only")
		return []Store{sqlite}
	}
	pg := Start(t)
	return []Store{sqlite, {"postgres", func(t *testing.T) string { return pg.Database(t) }}}
}
