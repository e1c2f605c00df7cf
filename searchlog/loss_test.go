package searchlog

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fullStore is a store that takes no batch of more than fits searches, as a full disk
// takes a small transaction where a large one does not fit.
type fullStore struct {
	store
	fits atomic.Int64
	// hang makes a write wait for its context to end (or release to be closed), as a
	// database that accepts and never answers does.
	hang    atomic.Bool
	release chan struct{}
}

var errFull = errors.New("database or disk is full (13)")

func (s *fullStore) tx(ctx context.Context, fn func(querier) error) error {
	return s.store.tx(ctx, func(q querier) error { return fn(fullTx{q, s}) })
}

type fullTx struct {
	querier
	s *fullStore
}

func (q fullTx) execMany(ctx context.Context, stmt string, args [][]any) error {
	if q.s.hang.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.s.release:
			return errFull
		}
	}
	if int64(len(args)) > q.s.fits.Load() {
		return errFull
	}
	return q.querier.execMany(ctx, stmt, args)
}

// openFull opens a log on a SQLite file through a fullStore, flushed only by the test.
func openFull(t *testing.T, w *warnings) (*Log, *fullStore) {
	t.Helper()
	ctx := context.Background()
	opts, err := Options{BatchSize: 4, QueueSize: 8, FlushInterval: time.Hour, PruneInterval: time.Hour, Logf: w.logf}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	st, err := openSQLite(ctx, target{path: filepath.Join(t.TempDir(), "log.db")}, opts.BusyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, st, SchemaVersion); err != nil {
		t.Fatal(err)
	}
	fs := &fullStore{store: st, release: make(chan struct{})}
	fs.fits.Store(1 << 20)
	l := start(fs, opts, false)
	t.Cleanup(func() { l.Close(context.Background()) })
	return l, fs
}

// searchesOf queues one search for each query.
func searchesOf(l *Log, queries ...string) {
	for _, q := range queries {
		l.Search(Search{Source: "gateway", Query: q, Mode: "bm25"})
	}
}

func queriesIn(t *testing.T, l *Log) []string {
	t.Helper()
	s, _ := read(t, l)
	var out []string
	for _, x := range s {
		out = append(out, x.Query)
	}
	slices.Sort(out)
	return out
}

// TestFullStoreWritesWhatFits: after a batch failed on a store that has room for small
// batches only, new records that fit are written, rather than retried with the failed
// batch in one transaction that never fits.
func TestFullStoreWritesWhatFits(t *testing.T) {
	var w warnings
	l, fs := openFull(t, &w)
	searchesOf(l, "a0", "a1", "a2", "a3")
	flush(t, l)
	fs.fits.Store(2)
	searchesOf(l, "b0", "b1", "b2", "b3")
	if err := l.Flush(context.Background()); !errors.Is(err, errFull) {
		t.Fatalf("Flush of a batch that does not fit: %v, want %v", err, errFull)
	}
	if l.Writing() {
		t.Error("Writing() is true with a batch that failed waiting")
	}
	searchesOf(l, "c0")
	if err := l.Flush(context.Background()); !errors.Is(err, errFull) {
		t.Fatalf("Flush with the failed batch still waiting: %v, want %v", err, errFull)
	}
	if got, want := queriesIn(t, l), []string{"a0", "a1", "a2", "a3", "c0"}; !slices.Equal(got, want) {
		t.Fatalf("written: %q, want %q: the new search fits and must be written", got, want)
	}
	// Room again: the failed batch is written too, and nothing was lost.
	fs.fits.Store(100)
	flush(t, l)
	if got := queriesIn(t, l); len(got) != 9 {
		t.Fatalf("written once the store has room: %q, want all 9", got)
	}
	if !l.Writing() {
		t.Error("Writing() is false once everything is written")
	}
	if w.count(cannotWrite) != 1 || w.count("writing to") != 1 || !strings.Contains(w.String(), "(0 records were lost meanwhile)") {
		t.Errorf("warnings:\n%s\nwant one about failing and one about writing again, with nothing lost", &w)
	}
}

// TestLossesSaid: records a failing store keeps beyond the queue's size are lost oldest
// first and said at once, with their count (later ones at most once a minute, the rest
// at exit); those it still keeps when the log closes are said lost at exit.
func TestLossesSaid(t *testing.T) {
	var w warnings
	l, fs := openFull(t, &w)
	fs.fits.Store(0)
	searchesOf(l, "b0", "b1", "b2", "b3")
	l.Flush(context.Background())
	searchesOf(l, "d0", "d1", "d2", "d3")
	l.Flush(context.Background())
	if n := l.Lost(); n != 0 {
		t.Fatalf("Lost() = %d with 8 records kept by a log that keeps 8, want 0\n%s", n, &w)
	}
	searchesOf(l, "e0", "e1", "e2", "e3")
	l.Flush(context.Background())
	if n := l.Lost(); n != 4 {
		t.Fatalf("Lost() = %d after 12 records failed on a log that keeps 8, want 4", n)
	}
	if w.count("4 records lost, the oldest") != 1 || !strings.Contains(w.String(), errFull.Error()) {
		t.Fatalf("warnings:\n%s\nwant one saying that 4 records were lost, and why, when they were", &w)
	}
	// More lost within the minute: counted, said at exit.
	searchesOf(l, "f0", "f1", "f2", "f3")
	l.Flush(context.Background())
	if n := w.count("records lost"); n != 1 {
		t.Fatalf("warnings:\n%s\nwant still one line about lost records within the minute", &w)
	}
	fs.fits.Store(2) // small batches fit, the 8 kept (e, f) do not
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := l.Lost(); n != 16 {
		t.Errorf("Lost() = %d after Close, want 16: 8 given up while failing, 8 at exit", n)
	}
	last := w.msgs[len(w.msgs)-1]
	if !strings.Contains(last, "4 records lost, the oldest") || !strings.Contains(last, "8 records lost at exit") {
		t.Errorf("last warning %q, want the 4 lost since the last line and the 8 lost at exit", last)
	}
	// Queries b and d were given up, e and f lost at exit: nothing was written.
	st := rawStore(t, fs.store.where())
	defer st.close()
	r, err := st.query(context.Background(), `SELECT COUNT(*) FROM searches`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int
	if !r.Next() || r.Scan(&n) != nil || n != 0 {
		t.Errorf("%d searches written, want 0", n)
	}
}

// TestCloseSaysWhatIsLost: a Close whose context ends before the store answers says how
// many records are lost.
func TestCloseSaysWhatIsLost(t *testing.T) {
	var w warnings
	l, fs := openFull(t, &w)
	fs.fits.Store(0)
	searchesOf(l, "a0", "a1", "a2", "a3")
	l.Flush(context.Background()) // fails: 4 kept
	fs.hang.Store(true)
	t.Cleanup(func() { close(fs.release) }) // before the log's Close (cleanups run last first)
	searchesOf(l, "b0", "b1")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := l.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "6 records not written") {
		t.Errorf("Close with a store that does not answer: %v, want the deadline, and 6 records not written", err)
	}
}
