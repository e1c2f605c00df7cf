package searchlog

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// sqliteStore is a log in a SQLite file, in WAL mode so that readers (toolshed stats)
// never wait for the writer nor the writer for them.
type sqliteStore struct {
	path   string
	params url.Values
	busy   time.Duration

	mu   sync.Mutex
	db   *sql.DB
	file os.FileInfo // the file as opened, to notice it deleted or replaced
}

func openSQLite(ctx context.Context, t target, busy time.Duration) (*sqliteStore, error) {
	s := &sqliteStore{path: t.path, params: t.params, busy: busy}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// open opens (and creates) the file, its directory too.
func (s *sqliteStore) open(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("searchlog: cannot create the directory of %s: %w", s.path, err)
	}
	// Create it with owner-only permissions: queries can be private.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("searchlog: cannot open %s: %w", s.path, err)
	}
	f.Close()
	q := url.Values{}
	for k, v := range s.params {
		q[k] = v
	}
	// The user's own _pragma parameters come after these, so they win.
	pragmas := []string{
		"busy_timeout(" + strconv.FormatInt(s.busy.Milliseconds(), 10) + ")",
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
	}
	q["_pragma"] = append(pragmas, q["_pragma"]...)
	// Write transactions take the write lock at BEGIN, so that two writers wait
	// for each other (busy_timeout) instead of one failing on lock upgrade.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+s.path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("searchlog: cannot open %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return fmt.Errorf("searchlog: cannot open %s: %w", s.path, err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		db.Close()
		return fmt.Errorf("searchlog: cannot open %s: %w", s.path, err)
	}
	s.mu.Lock()
	s.db, s.file = db, fi
	s.mu.Unlock()
	return nil
}

func (s *sqliteStore) handle() *sql.DB {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db
}

func (s *sqliteStore) where() string       { return s.path }
func (s *sqliteStore) idColumn() string    { return "INTEGER PRIMARY KEY" }
func (s *sqliteStore) bytesColumn() string { return "BLOB" }

func (s *sqliteStore) close() {
	if db := s.handle(); db != nil {
		db.Close()
	}
}

// check notices the file deleted or replaced while the log had it open (writes would
// go to the deleted file, lost): it opens the path anew, and migrates it.
func (s *sqliteStore) check(ctx context.Context) (bool, error) {
	s.mu.Lock()
	opened := s.file
	s.mu.Unlock()
	if fi, err := os.Stat(s.path); err == nil && os.SameFile(fi, opened) {
		return false, nil
	}
	old := s.handle()
	if err := s.open(ctx); err != nil {
		return false, err
	}
	old.Close()
	return true, migrate(ctx, s, SchemaVersion)
}

func (s *sqliteStore) tx(ctx context.Context, fn func(querier) error) error {
	tx, err := s.handle().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqliteTx{tx}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqliteStore) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.handle().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

type sqliteTx struct{ tx *sql.Tx }

func (t sqliteTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}

func (t sqliteTx) execMany(ctx context.Context, q string, args [][]any) error {
	if len(args) == 0 {
		return nil
	}
	st, err := t.tx.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, a := range args {
		if _, err := st.ExecContext(ctx, a...); err != nil {
			return err
		}
	}
	return nil
}

func (t sqliteTx) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

// lock is a no-op: the transaction holds SQLite's write lock from its start.
func (sqliteTx) lock(context.Context) error { return nil }

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
