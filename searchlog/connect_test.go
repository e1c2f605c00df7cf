package searchlog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
)

// TestPostgresDownAtOpen: with ConnectLater, a database that is down at Open costs one
// warning, not the Log; the Log keeps what is recorded meanwhile, connects once the
// database is up, and writes what it kept and what follows. Without it, Open fails.
func TestPostgresDownAtOpen(t *testing.T) {
	dsn, up := pgtest.Start(t).Later(t)
	ctx := context.Background()
	if _, err := Open(ctx, dsn, Options{}); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("Open of a database that is down, without ConnectLater: %v, want an error saying it cannot connect", err)
	}
	var w warnings
	l, err := Open(ctx, dsn, Options{ConnectLater: true, Logf: w.logf})
	if err != nil {
		t.Fatalf("Open with ConnectLater of a database that is down: %v", err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	if w.count("cannot connect") != 1 || len(w.msgs) != 1 {
		t.Fatalf("warnings:\n%s\nwant one saying it cannot connect", &w)
	}
	if l.Writing() {
		t.Error("Writing() is true with the database down")
	}
	if ev, err := l.Evidence(ctx, EvidenceOptions{}); err != nil || len(ev) != 0 {
		t.Errorf("Evidence while not connected: %v, %v; want none and no error (the Log said why)", ev, err)
	}
	l.Search(Search{Source: "gateway", Query: "while down", Mode: "bm25"})
	if err := l.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded with the database down")
	}

	up()
	l.Search(Search{Source: "gateway", Query: "once up", Mode: "bm25"})
	// The Log tries again after a wait that grows to 15 s at most.
	deadline := time.Now().Add(2 * time.Minute)
	for err := l.Flush(ctx); err != nil; err = l.Flush(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("the Log did not connect within 2 minutes of the database coming up: %v\n%s", err, &w)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !l.Writing() {
		t.Error("Writing() is false once the log wrote to the database")
	}
	s, _ := read(t, l)
	var got []string
	for _, x := range s {
		got = append(got, x.Query)
	}
	if want := []string{"while down", "once up"}; !slices.Equal(got, want) {
		t.Errorf("searches written: %q, want %q", got, want)
	}
	l.Search(Search{Source: "gateway", Query: "later", Mode: "bm25"})
	flush(t, l)
	if s, _ := read(t, l); len(s) != 3 {
		t.Errorf("%d searches after one more, want 3", len(s))
	}
	if w.count("cannot connect") != 1 || w.count("connected to") != 1 || !strings.Contains(w.String(), "(0 records were lost meanwhile)") {
		t.Errorf("warnings:\n%s\nwant one that it cannot connect, one that it connected with nothing lost", &w)
	}
}

// TestPostgresBadNameFailsAtOnce: ConnectLater waits for a database, not for a name that
// can never work.
func TestPostgresBadNameFailsAtOnce(t *testing.T) {
	for _, dsn := range []string{
		"postgres://user@127.0.0.1:5432/db?sslmode=bogus",
		"postgres://user@127.0.0.1:99999999/db",
		"mysql://user@127.0.0.1/db",
	} {
		_, err := Open(context.Background(), dsn, Options{ConnectLater: true, Logf: func(string, ...any) {}})
		if !errors.Is(err, ErrBadDSN) {
			t.Errorf("Open(%q) with ConnectLater: %v, want %v", dsn, err, ErrBadDSN)
		}
	}
}
