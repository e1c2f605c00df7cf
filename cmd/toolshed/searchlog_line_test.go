package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/pgtest"
)

// openLogLine opens the search log as serve does, with the config's search_log and the
// --db and --log-queries flags, closes it, and returns what it printed.
func openLogLine(t *testing.T, cfg config.SearchLog, db, queries string) string {
	t.Helper()
	var stderr bytes.Buffer
	log, err := openServeLog(cfg, searchLogFlags{db: &db, queries: &queries}, &stderr)
	if err != nil {
		t.Fatalf("opening the search log: %v", err)
	}
	if log != nil {
		if err := log.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return stderr.String()
}

// At start-up serve says where the search log is written and what it keeps of the
// queries, with the flags that keep less; with --db off it says nothing.
func TestServeSaysWhereSearchLogIs(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	file := filepath.Join(data, "toolshed", "searchlog.db")
	for _, tc := range []struct {
		name        string
		cfg         config.SearchLog
		db, queries string
		want        string
	}{
		{"default", config.SearchLog{}, "", "", "toolshed: search log: " + file + " (queries in plain text; --log-queries hash|off, --db off)\n"},
		{"hash", config.SearchLog{}, "", "hash", "toolshed: search log: " + file + " (queries as SHA-256 hashes; --log-queries off, --db off)\n"},
		{"config off", config.SearchLog{Queries: "off"}, "", "", "toolshed: search log: " + file + " (no queries, only the tools found and called; --db off)\n"},
		{"flag over config", config.SearchLog{Queries: "off"}, "", "plain", "toolshed: search log: " + file + " (queries in plain text; --log-queries hash|off, --db off)\n"},
		{"named file", config.SearchLog{}, filepath.Join(data, "other.db"), "", "toolshed: search log: " + filepath.Join(data, "other.db") + " (queries in plain text; --log-queries hash|off, --db off)\n"},
		{"db off", config.SearchLog{}, "off", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := openLogLine(t, tc.cfg, tc.db, tc.queries); got != tc.want {
				t.Errorf("serve printed %q, want %q", got, tc.want)
			}
		})
	}
}

// The start-up line of a PostgreSQL search log names the database without its
// password, wherever the name carries it: as user:password@, as a parameter (also one
// Go's URL parser skips: after a semicolon, or with a bad escape, which pgx skips too
// and a message still shows), or in a libpq keyword=value string, which is read as
// PostgreSQL and not as a file named after the password.
func TestServeSearchLogLineHidesPassword(t *testing.T) {
	dsn := pgtest.Start(t).Database(t)
	const secret = "s3cret-in-url"
	withUser, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	withUser.User = url.UserPassword(withUser.User.Username(), secret) // the test server trusts loopback: any password works
	withParam, _ := url.Parse(dsn)
	q := withParam.Query()
	q.Set("password", secret)
	withParam.RawQuery = q.Encode()
	bare, _ := url.Parse(dsn)
	bare.RawQuery = ""
	keywords := fmt.Sprintf("host=%s port=%s user=%s dbname=%s password=%s", bare.Hostname(), bare.Port(), bare.User.Username(), strings.TrimPrefix(bare.Path, "/"), secret)
	t.Chdir(t.TempDir())
	for _, tc := range []struct{ where, dsn, prefix string }{
		{"user:password@", withUser.String(), "postgres://"},
		{"a password= parameter", withParam.String(), "postgres://"},
		{"a parameter after a semicolon", bare.String() + "?sslmode=disable;password=" + secret, "postgres://"},
		{"a parameter with a bad escape", bare.String() + "?password=" + secret + "%ZZ", "postgres://"},
		{"a libpq keyword=value string", keywords, "host="},
	} {
		var stderr bytes.Buffer
		db, queries := tc.dsn, ""
		log, err := openServeLog(config.SearchLog{}, searchLogFlags{db: &db, queries: &queries}, &stderr)
		if err != nil { // pgx refuses some of these: its message must not show the password either
			if strings.Contains(err.Error(), secret) {
				t.Errorf("with the password in %s, serve failed with %q", tc.where, err)
			}
			continue
		}
		log.Close(context.Background())
		if line := stderr.String(); strings.Contains(line, secret) || !strings.Contains(line, "xxxxx") || !strings.HasPrefix(line, "toolshed: search log: "+tc.prefix) {
			t.Errorf("with the password in %s, serve printed %q; want the database with xxxxx for the password", tc.where, stderr.String())
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("opening the search log created %s in the working directory", entries[0].Name())
	}
}
