package searchlog

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ErrBadDSN is wrapped by the error Open returns for a database name it cannot read.
var ErrBadDSN = errors.New("searchlog: bad database name")

// DefaultPath returns where the log lives when no database is named:
// $XDG_DATA_HOME/toolshed/searchlog.db, with XDG_DATA_HOME defaulting to
// ~/.local/share as the XDG base directory specification says (a relative
// XDG_DATA_HOME is ignored, as the specification also says).
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("searchlog: no data directory for the search log (%v); set XDG_DATA_HOME or name a database", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "toolshed", "searchlog.db"), nil
}

// target is a parsed database name: a SQLite file (path, with the file: URI's query
// parameters in params) or a PostgreSQL connection string.
type target struct {
	postgres string
	path     string
	params   url.Values
}

// parseDSN reads a database name: "" for the default file, a path, "sqlite:PATH",
// "file:PATH[?params]", or "postgres://..." / "postgresql://...".
func parseDSN(dsn string) (target, error) {
	switch {
	case dsn == "":
		p, err := DefaultPath()
		return target{path: p}, err
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return target{}, fmt.Errorf("%w: %v", ErrBadDSN, redactErr(err))
		}
		return target{postgres: dsn}, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		dsn = strings.TrimPrefix(dsn, "sqlite:")
		if !strings.HasPrefix(dsn, "file:") {
			if dsn == "" {
				return target{}, fmt.Errorf("%w: %q names no file; write sqlite:PATH", ErrBadDSN, "sqlite:")
			}
			return target{path: dsn}, nil
		}
	}
	if rest, ok := strings.CutPrefix(dsn, "file:"); ok {
		path, query, _ := strings.Cut(rest, "?")
		params, err := url.ParseQuery(query)
		if err != nil {
			return target{}, fmt.Errorf("%w: %q: %v", ErrBadDSN, dsn, err)
		}
		if path == "" || strings.HasPrefix(path, ":memory:") || params.Get("mode") == "memory" {
			return target{}, fmt.Errorf("%w: %q names no file (an in-memory database would lose the log); name a file", ErrBadDSN, dsn)
		}
		path = strings.TrimPrefix(path, "//") // file:///abs/path
		return target{path: path, params: params}, nil
	}
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		return target{}, fmt.Errorf("%w: %q: toolshed knows postgres:// and postgresql:// databases and SQLite files (a path, sqlite:PATH or file:PATH)", ErrBadDSN, scheme+"://")
	}
	return target{path: dsn}, nil
}

// File returns the SQLite file a database name names (see Open; "" names the default
// file), and false for a PostgreSQL URL, which names no file. A reader such as toolshed
// stats checks that the file is there before it opens it, since Open creates it.
func File(dsn string) (path string, isFile bool, err error) {
	t, err := parseDSN(dsn)
	if err != nil || t.postgres != "" {
		return "", false, err
	}
	return t.path, true, nil
}

// redactErr drops what a URL parse error quotes: the URL, password included.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
