package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/stats"
)

// openSearchLog opens the search log at dsn ("" for the default location) for reading,
// and returns it as the records' source, and what closes it. It is where toolshed stats
// meets the store.
var openSearchLog = func(ctx context.Context, dsn string) (stats.Source, func() error, error) {
	return nil, nil, errors.New("this build cannot open the search log store yet; pass a records file with --from FILE")
}

// statsOpenTimeout bounds opening the search log (connecting included, which the
// store bounds by 10 s itself), and statsReadTimeout reading it: a database that
// accepts and never answers must not hold toolshed stats.
const (
	statsOpenTimeout = 30 * time.Second
	statsReadTimeout = 5 * time.Minute
)

func runStats(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	sinceFlag := fs.String("since", "7d", "report the last `WINDOW`: days (7d) or a duration (36h, 90m)")
	untilFlag := fs.String("until", "", "end the window at `TIME` (RFC 3339, such as 2026-12-01T00:00:00Z) instead of now")
	dsn := fs.String("db", "", "read the search log at `DSN`: a SQLite file or postgres://… (default: the one in the data directory)")
	from := fs.String("from", "", "read the records from `FILE` (JSON lines of searches and calls) instead of the search log")
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "catalog `FILE` of the tools served (repeatable): lists the tools never surfaced, and checks suggested keywords against descriptions")
	configFile := envDefault(fs.String("config", "", "start the servers of the gateway's config `FILE` to list their tools, as --catalog does (default $TOOLSHED_CONFIG)"), "TOOLSHED_CONFIG")
	asJSON := fs.Bool("json", false, "print JSON")
	htmlFile := fs.String("html", "", "write the report as one self-contained web page to `FILE`")
	top := fs.Int("top", stats.DefaultTop, "keep `N` rows in each ranked list")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--since WINDOW] [--until TIME] [--db DSN | --from FILE] [--config FILE] [--catalog FILE]... [--top N] [--json] [--html FILE]",
			"How tool search served, from the search log: searches, empty results, likely misses, badly ranked and unsurfaced calls, server errors, latency, tokens saved, and suggested keyword overrides for the tools it missed.")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	window, err := stats.ParseSince(*sinceFlag)
	if err != nil {
		return usageErr("%v", err)
	}
	until := time.Now().UTC()
	if *untilFlag != "" {
		if until, err = time.Parse(time.RFC3339Nano, *untilFlag); err != nil {
			return usageErr("--until %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", *untilFlag)
		}
	}
	if *top < 1 {
		return usageErr("--top must be at least 1, got %d", *top)
	}
	if *from != "" && *dsn != "" {
		return usageErr("--db and --from both name the records; give one")
	}
	// The config is read before the log is opened, and its servers start after: a
	// mistake in it is reported at once, and servers start only for a log that opens.
	var cfg *config.Config
	if *configFile != "" {
		if cfg, err = loadServersConfig(*configFile, stderr); err != nil {
			return err
		}
	}
	since := until.Add(-window)
	var src stats.Source
	if *from != "" {
		if src, err = readFile(*from); err != nil {
			return err
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), statsOpenTimeout)
		var closeLog func() error
		src, closeLog, err = openSearchLog(ctx, *dsn)
		cancel()
		if err != nil {
			return err
		}
		defer closeLog()
	}
	var snap *catalog.Snapshot
	switch {
	case cfg != nil:
		if snap, err = configCatalog(context.Background(), cfg, *configFile, "counted", stderr); err != nil {
			return err
		}
	case len(catalogs) > 0:
		if snap, err = loadCatalog(catalogs, stderr); err != nil {
			return err
		}
	}

	// The records are read as the report is computed, not held: a log of millions of
	// records costs a few bytes each.
	ctx, cancel := context.WithTimeout(context.Background(), statsReadTimeout)
	defer cancel()
	r, err := stats.ComputeFrom(ctx, src, stats.Options{Since: since, Until: until, Catalog: snap, Top: *top})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (toolshed stats gives up reading the search log after %s; a narrower --since reads less)", err, statsReadTimeout)
	}
	if err != nil {
		return err
	}

	if *htmlFile != "" {
		var page bytes.Buffer
		if err := r.WriteHTML(&page); err != nil {
			return err
		}
		if err := writeFileAtomic(*htmlFile, page.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "toolshed stats: wrote %s (%d searches, %d calls)\n", *htmlFile, r.Searches, r.Calls)
		if !*asJSON {
			return nil
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(stdout)
}

// readFile reads the records of a records file, into memory (stats.ComputeFrom cuts
// the window).
func readFile(path string) (stats.Source, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("there is no records file at %s: check the path given to --from (a file of JSON lines of searches and calls), or leave --from out to read the search log", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	searches, calls, err := stats.ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return stats.Records(searches, calls), nil
}

// writeFileAtomic writes data to path through a temporary file in the same directory,
// so that a failed write leaves any earlier file whole.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
