package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/pgtest"
)

// TestServeStartsWithPostgresDown: serve --db postgres://… starts and answers while the
// database is down, says so once, and once the database is up writes the searches made
// from then on to it. A replica must not crash-loop through a database outage.
func TestServeStartsWithPostgresDown(t *testing.T) {
	dsn, up := pgtest.Start(t).Later(t)
	cs, stderr := serveStdio(t, nil, "--tool-search", "on", "--db", dsn)
	search := func(query string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": query}})
		if err != nil || res.IsError {
			t.Fatalf("tool_search %q: %v %+v\n%s", query, err, res, stderr)
		}
	}
	search("create an issue while the database is down")
	if n := strings.Count(stderr.String(), "cannot connect"); n != 1 {
		t.Fatalf("serve's stderr says %d times that it cannot connect, want once:\n%s", n, stderr)
	}

	up()
	const after = "create an issue once the database is up"
	search(after)
	// The log connects within its retry wait (15 s at most), then writes within its
	// flush interval.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last error
	for {
		n, err := countSearches(ctx, dsn, after)
		if err == nil && n == 1 {
			break
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("the search made once the database was up is not in it after 2 minutes (last error: %v):\n%s", last, stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "search log: connected to"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's stderr does not say that the search log connected:\n%s", stderr)
		}
	}
	if n := strings.Count(stderr.String(), "cannot connect"); n != 1 {
		t.Errorf("serve's stderr says %d times that it cannot connect, want once:\n%s", n, stderr)
	}
}

// countSearches counts the searches of query in the log at dsn.
func countSearches(ctx context.Context, dsn, query string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT COUNT(*) FROM searches WHERE query = $1`, query).Scan(&n)
	return n, err
}
