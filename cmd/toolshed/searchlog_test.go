package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// TestStatsReadsTheStore: toolshed stats --db reads what a Log wrote to a SQLite file.
func TestStatsReadsTheStore(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "log.db")
	log, err := searchlog.Open(ctx, db, searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	log.Search(searchlog.Search{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Query: "add numbers", Mode: "bm25", Results: []searchlog.Hit{{Tool: "alpha__add", Rank: 1}}})
	log.Search(searchlog.Search{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Query: "nothing here", Mode: "bm25"})
	log.Call(searchlog.Call{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Tool: "alpha__add", Server: "alpha", Outcome: searchlog.OutcomeOK, Rank: 1, Query: "add numbers"})
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stats", "--json", "--db", db}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r struct{ Searches, Calls int }
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	if r.Searches != 2 || r.Calls != 1 {
		t.Errorf("stats counted %d searches and %d calls, want 2 and 1:\n%s", r.Searches, r.Calls, stdout.String())
	}
}

// TestStatsWithoutStore: with no log yet, stats says so rather than create one.
func TestStatsWithoutStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stats"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "no search log at") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestStatsGivesUpOnSilentDatabase: toolshed stats --db against a PostgreSQL address
// that accepts connections and never answers fails, saying it cannot connect, instead
// of hanging.
func TestStatsGivesUpOnSilentDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, read from by no one, never answered
			mu.Unlock()
		}
	}()
	dsn := "postgres://stats@" + ln.Addr().String() + "/log?sslmode=disable"
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var stdout, stderr bytes.Buffer
		code := run([]string{"stats", "--db", dsn}, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	select {
	case r := <-done:
		if r.code == 0 || !strings.Contains(r.stderr, "cannot connect to postgres://stats@") || !strings.Contains(r.stderr, "timeout") {
			t.Errorf("exit %d after %s, stderr:\n%s\nwant a failure saying it cannot connect, for a timeout", r.code, time.Since(start).Round(time.Millisecond), r.stderr)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("toolshed stats still waits for a database that never answers after 90 s")
	}
}
