// Package pgtest starts a real PostgreSQL server for tests: the Debian package's
// binaries, on 127.0.0.1 at an unused port, with a data directory of its own that is
// removed when the test ends. The server dies with the test binary, however that
// ends, and leaves no shared memory behind.
//
// A machine without PostgreSQL skips the tests that need it, saying how to install it,
// except with TOOLSHED_TEST_REQUIRE_ALL set (as in CI, whose .ci/run installs the
// postgresql package), where a missing server is a failure (testupstream.Missing).
package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// Server is a running PostgreSQL server.
type Server struct {
	// URL connects to its postgres database as the superuser postgres.
	URL  string
	port int
	seq  atomic.Int64

	stopOnce sync.Once
	stop     func()
}

// Stop stops the server now (a fast shutdown), as a database that goes away in the
// middle of a run does; the test's end does it otherwise.
func (s *Server) Stop() { s.stopOnce.Do(s.stop) }

// binDir finds the newest installed PostgreSQL's binaries (TOOLSHED_PG_BIN overrides).
func binDir() (string, error) {
	if d := os.Getenv("TOOLSHED_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("TOOLSHED_PG_BIN=%s has no initdb: %v", d, err)
		}
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", fmt.Errorf("no PostgreSQL found (/usr/lib/postgresql/*/bin/initdb); install the postgresql package, or set TOOLSHED_PG_BIN")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start starts a server for tb, stopped when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := binDir()
	if err != nil {
		testupstream.Missing(tb, "PostgreSQL", "apt-get install postgresql", err)
	}
	s, stop, err := start(bin)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	s.stop = stop
	tb.Cleanup(s.Stop)
	return s
}

// Database creates a fresh, empty database on s and returns its URL.
func (s *Server) Database(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("test_%d", s.seq.Add(1))
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	return strings.Replace(s.URL, "/postgres?", "/"+name+"?", 1)
}

// ready waits until the server accepts connections.
func ready(url string, exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("postgres exited while starting: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not accept connections: %v", last)
}
