package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/stats"
	"github.com/toolshed/toolshed/searchlog"
)

// searchLogFlags are the flags that choose the search log, over the config's search_log.
type searchLogFlags struct {
	db, queries *string
}

func (f searchLogFlags) check() error {
	switch *f.queries {
	case "", searchlog.QueriesPlain, searchlog.QueriesHash, searchlog.QueriesOff:
		return nil
	}
	return usageErr("--log-queries must be plain, hash or off, got %q", *f.queries)
}

// openServeLog opens the search log the flags and the config name: nil for off. A
// database named explicitly that cannot be opened is an error; the default file, when
// it cannot be (a read-only home, say), costs a warning and the log, not the gateway.
func openServeLog(cfg config.SearchLog, f searchLogFlags, stderr io.Writer) (*searchlog.Log, error) {
	dsn, explicit := cfg.DB, cfg.DB != ""
	if *f.db != "" {
		dsn, explicit = *f.db, true
	}
	if dsn == "off" {
		return nil, nil
	}
	queries := cfg.Queries
	if *f.queries != "" {
		queries = *f.queries
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := searchlog.Open(ctx, dsn, searchlog.Options{
		Queries: queries, MaxAge: cfg.MaxAge, MaxRows: cfg.MaxRows,
		// A PostgreSQL database that is down costs a warning, not the replica: it
		// serves, and the log connects when the database is back.
		ConnectLater: true,
		Logf:         func(format string, args ...any) { fmt.Fprintf(stderr, "toolshed: warning: "+format+"\n", args...) },
	})
	if err != nil {
		if explicit || errors.Is(err, searchlog.ErrNewerSchema) {
			return nil, fmt.Errorf("%w; name another database with --db, or run without the search log with --db off", err)
		}
		fmt.Fprintf(stderr, "toolshed: warning: %v; running without the search log (--db names another database)\n", err)
		return nil, nil
	}
	fmt.Fprintln(stderr, searchLogLine(log.Where(), queries))
	return log, nil
}

// searchLogLine says where the search log is written and what it keeps of the queries,
// and how to keep less: the log is on by default, in a file every toolshed serve of the
// user shares, and a query can hold what the user typed. where is Log.Where, which
// shows no password.
func searchLogLine(where, queries string) string {
	kept := "queries in plain text; --log-queries hash|off, --db off"
	switch queries {
	case searchlog.QueriesHash:
		kept = "queries as SHA-256 hashes; --log-queries off, --db off"
	case searchlog.QueriesOff:
		kept = "no queries, only the tools found and called; --db off"
	}
	return fmt.Sprintf("toolshed: search log: %s (%s)", where, kept)
}

func init() {
	// toolshed stats reads the store through openSearchLog (see stats.go).
	openSearchLog = openLogForReading
}

// openLogForReading opens the search log at dsn ("" for the default file) to read it.
// It prunes nothing (the gateway's retention settings are not known here), and creates
// no file: a SQLite file that is not there, the default or one --db names (a typo, say),
// is an error saying so.
func openLogForReading(ctx context.Context, dsn string) (stats.Source, func() error, error) {
	log, err := openLogFile(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	return log, func() error { return log.Close(context.Background()) }, nil
}

// openLogFile opens the search log at dsn ("" for the default file) to read it, as
// openLogForReading says.
func openLogFile(ctx context.Context, dsn string) (*searchlog.Log, error) {
	path, isFile, err := searchlog.File(dsn)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); isFile && errors.Is(err, fs.ErrNotExist) {
		if dsn == "" {
			return nil, fmt.Errorf("there is no search log at %s yet: toolshed serve records one as it serves (or name it with --db)", path)
		}
		def, err := searchlog.DefaultPath()
		if err != nil {
			def = "the one in the data directory"
		}
		return nil, fmt.Errorf("there is no search log at %s: check the path given to --db (without --db, stats reads %s, where toolshed serve records unless its --db or the config's search_log.db names another database)", path, def)
	}
	return searchlog.Open(ctx, dsn, searchlog.Options{MaxAge: -1, MaxRows: -1, Logf: func(string, ...any) {}})
}

// closeSearchLog writes what the log still holds, for a few seconds at most.
func closeSearchLog(log *searchlog.Log, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := log.Close(ctx); err != nil {
		fmt.Fprintf(stderr, "toolshed: warning: the search log could not write its last records: %v\n", err)
	}
}
