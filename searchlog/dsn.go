package searchlog

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolshed/toolshed/internal/redact"
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
// "file:PATH[?params]", "postgres://..." / "postgresql://...", or a libpq
// keyword=value string (host=... dbname=...). A name that holds a libpq keyword=value
// pair anywhere is read as such a string and refused if it is not a valid one, never
// taken as a file's path: its file would be named after the password it holds.
func parseDSN(dsn string) (target, error) {
	switch {
	case dsn == "":
		p, err := DefaultPath()
		return target{path: p}, err
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return target{}, fmt.Errorf("%w: %s", ErrBadDSN, redact.Error(err))
		}
		return target{postgres: dsn}, nil
	case keywordPair.MatchString(dsn):
		if _, err := pgconn.ParseConfig(dsn); err != nil {
			return target{}, fmt.Errorf("%w: %s reads as a PostgreSQL keyword=value string, but not a valid one (%s); write it as host=HOST port=PORT user=USER password=PASSWORD dbname=NAME (quote a value holding spaces in single quotes), or as a postgres:// URL", ErrBadDSN, redact.String(dsn), redact.Error(err))
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
			return target{}, fmt.Errorf("%w: %q: %s", ErrBadDSN, redact.String(dsn), redact.Error(err))
		}
		if path == "" || strings.HasPrefix(path, ":memory:") || params.Get("mode") == "memory" {
			return target{}, fmt.Errorf("%w: %q names no file (an in-memory database would lose the log); name a file", ErrBadDSN, redact.String(dsn))
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

// keywordPair finds a libpq keyword=value pair (libpq's connection keywords, "Parameter
// Key Words" in its manual) at the start of a name or after a space.
var keywordPair = regexp.MustCompile(`(^|\s)(host|hostaddr|port|dbname|user|password|passfile|require_auth|channel_binding|connect_timeout|client_encoding|options|application_name|fallback_application_name|keepalives|keepalives_idle|keepalives_interval|keepalives_count|tcp_user_timeout|replication|gssencmode|sslmode|requiressl|sslnegotiation|sslcompression|sslcert|sslkey|sslpassword|sslcertmode|sslrootcert|sslcrl|sslcrldir|sslsni|requirepeer|ssl_min_protocol_version|ssl_max_protocol_version|krbsrvname|gsslib|gssdelegation|service|target_session_attrs|load_balance_hosts)\s*=`)
