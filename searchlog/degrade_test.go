package searchlog

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
)

const cannotWrite = "cannot write to"

// recordMany queues more records than the queue holds: it returns only because
// Search never waits for the store.
func recordMany(l *Log, n int) {
	for range n {
		l.Search(Search{Source: "gateway", Query: "while failing", Mode: "bm25"})
	}
}

// failingFlushes flushes n times, each failing.
func failingFlushes(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := range n {
		l.Search(Search{Source: "gateway", Query: "during", Mode: "bm25"})
		if err := l.Flush(context.Background()); err == nil {
			t.Fatalf("Flush %d succeeded on a failing store", i+1)
		}
	}
}

func TestSQLiteFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	var w warnings
	// A database that may not grow past 16 pages of 4 KiB.
	l := open(t, "file:"+path+"?_pragma=max_page_count(16)", Options{Logf: w.logf})
	big := strings.Repeat("x", maxQueryBytes)
	full := false
	for range 200 {
		l.Search(Search{Source: "gateway", Query: big, Mode: "bm25"})
		if err := l.Flush(context.Background()); err != nil {
			if !strings.Contains(err.Error(), "full") {
				t.Fatalf("Flush: %v, want the database full", err)
			}
			full = true
			break
		}
	}
	if !full {
		t.Fatal("the database never filled up")
	}
	failingFlushes(t, l, 3)
	if n := w.count(cannotWrite); n != 1 {
		t.Fatalf("%d warnings about the full store, want 1:\n%s", n, &w)
	}
	// The operator frees space: the log writes again, what it kept included.
	other := sqlOpen(t, path)
	if _, err := other.Exec(`DELETE FROM searches WHERE query <> 'during'`); err != nil {
		t.Fatal(err)
	}
	l.Search(Search{Source: "gateway", Query: "after", Mode: "bm25"})
	flush(t, l)
	s, _ := read(t, l)
	if len(s) == 0 || s[len(s)-1].Query != "after" {
		t.Fatalf("after freeing space, the last search is not the new one: %d searches", len(s))
	}
	if w.count("writing to") != 1 || w.count(cannotWrite) != 1 {
		t.Errorf("warnings:\n%s\nwant one about failing and one about writing again", &w)
	}
}

func TestSQLiteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	var w warnings
	l := open(t, path, Options{Logf: w.logf, BusyTimeout: 20 * time.Millisecond})
	// Another process's transaction holds the write lock.
	other := sqlOpen(t, path)
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	failingFlushes(t, l, 3)
	if n := w.count(cannotWrite); n != 1 || !strings.Contains(w.String(), "locked") {
		t.Fatalf("%d warnings about the locked store, want 1 saying it is locked:\n%s", n, &w)
	}
	if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	flush(t, l)
	s, _ := read(t, l)
	if len(s) != 3 {
		t.Fatalf("after the lock is released: %d searches, want the 3 recorded while it was held", len(s))
	}

	// Locked again, with more records than the log keeps: the rest are dropped, with
	// one warning, and Search still returns at once.
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	recordMany(l, 3*DefaultQueueSize)
	if l.Dropped() == 0 {
		t.Fatalf("no record dropped out of %d queued while the store was locked", 3*DefaultQueueSize)
	}
	if err := l.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded on a locked store")
	}
	if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	flush(t, l)
	s, _ = read(t, l)
	if len(s) < 3+DefaultQueueSize/2 || len(s) > 3+3*DefaultQueueSize {
		t.Errorf("after the second lock: %d searches, want the ones the log kept", len(s))
	}
	// The records past what the log keeps are lost one way or the other, as the
	// writer and the callers happen to be scheduled: dropped by the full queue, or
	// given up from those waiting for the store. Either is said, once.
	if w.count(cannotWrite) != 2 || w.count("search log: ")-w.count(cannotWrite)-w.count("search log: writing to ") != 1 {
		t.Errorf("warnings:\n%s\nwant one per failing spell, one when it works again, and one about the records lost", &w)
	}
}

func TestSQLiteDeleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "toolshed")
	path := filepath.Join(dir, "log.db")
	var w warnings
	l := open(t, path, Options{Logf: w.logf})
	l.Search(Search{Source: "gateway", Query: "before", Mode: "bm25"})
	flush(t, l)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l.Search(Search{Source: "gateway", Query: "after", Mode: "bm25"})
	flush(t, l)
	l.Search(Search{Source: "gateway", Query: "later", Mode: "bm25"})
	flush(t, l)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the deleted file was not created anew: %v", err)
	}
	s, _ := read(t, l)
	if len(s) != 2 || s[0].Query != "after" || s[1].Query != "later" {
		t.Fatalf("searches in the new file: %+v, want the two recorded after the delete", s)
	}
	if n := w.count("deleted"); n != 1 || len(w.msgs) != 1 {
		t.Errorf("warnings:\n%s\nwant one, about the deleted file", &w)
	}
}

// TestPostgresBroken: a table gone (renamed by an operator) fails every write with
// one warning; once it is back, the log writes again.
func TestPostgresBroken(t *testing.T) {
	dsn := pgtest.Start(t).Database(t)
	var w warnings
	l := open(t, dsn, Options{Logf: w.logf})
	st := rawStore(t, dsn)
	defer st.close()
	exec(t, st, `ALTER TABLE searches RENAME TO searches_away`)
	failingFlushes(t, l, 3)
	recordMany(l, 2*DefaultQueueSize)
	// The queue, full now, is taken in by a write that fails.
	if err := l.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded on a broken store")
	}
	if n := w.count(cannotWrite); n != 1 {
		t.Fatalf("%d warnings about the broken store, want 1:\n%s", n, &w)
	}
	exec(t, st, `ALTER TABLE searches_away RENAME TO searches`)
	l.Search(Search{Source: "gateway", Query: "after", Mode: "bm25"})
	flush(t, l)
	s, _ := read(t, l)
	if len(s) == 0 || s[len(s)-1].Query != "after" {
		t.Fatalf("after the table came back, the last search is not the new one: %d searches", len(s))
	}
	if w.count(cannotWrite) != 1 {
		t.Errorf("warnings:\n%s\nwant one about failing", &w)
	}
}

func sqlOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
