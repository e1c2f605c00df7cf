package pgtest

import (
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// Store is a kind of search-log database a test runs on.
type Store struct {
	Name string // "sqlite" or "postgres"
	// DSN names a new, empty database of the kind.
	DSN func(t *testing.T) string
}

// Stores returns a SQLite file and a database of a PostgreSQL server started for t: what
// every test of something kept in the search log's store runs on. Where PostgreSQL is
// not installed, the PostgreSQL store's DSN ends the (sub)test that asks for it with
// testupstream.Missing: a skip that says so, or a failure in CI.
func Stores(t *testing.T) []Store {
	sqlite := Store{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "log.db") }}
	if _, err := binDir(); err != nil {
		return []Store{sqlite, {"postgres", func(t *testing.T) string {
			testupstream.Missing(t, "PostgreSQL", "apt-get install postgresql", err)
			return ""
		}}}
	}
	pg := Start(t)
	return []Store{sqlite, {"postgres", func(t *testing.T) string { return pg.Database(t) }}}
}
