// Package sqlstore keeps toolshed's upstream sign-in credentials (oauth.Credential)
// in a SQL database, encrypted, for gateway replicas that share them: one sign-in
// with `toolshed auth login` serves every replica, and a refresh by one is seen by
// all. It takes the databases the search log takes (a SQLite file or PostgreSQL,
// named the same ways; see searchlog.Open), and may share the search log's.
//
// Every credential is sealed with AES-256-GCM under a key from the environment
// (TOOLSHED_TOKEN_KEY, which a Kubernetes Secret provides), with a random nonce per
// write; the key's id and the row's key (the server's URL) are authenticated with
// it, so that a row copied to another server's, or read with another key, fails to
// open rather than yielding another server's token. There is no plaintext mode:
// without a key, Open fails and says how to make one. A rotation sets the new key
// in TOOLSHED_TOKEN_KEY and the old one in TOOLSHED_TOKEN_KEY_PREVIOUS; rows are
// sealed anew with the new key as they are written (each refresh), or all at once
// with Rekey.
//
// Update is atomic across processes, which is what keeps replicas from using one
// refresh token twice (see oauth.Transport): on PostgreSQL it holds a transaction
// advisory lock on the row's key, so updates of other credentials go on; on
// SQLite it holds the file's write lock (BEGIN IMMEDIATE), so updates take turns.
// Only the server's URL and its issuer are stored in the clear. The clients toolshed
// registered with authorization servers (oauth.RegistrationStore) are kept in the same
// table, sealed the same way.
package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/searchlog"
)

// table is the store's one table. The columns:
//
//	key         the server's canonical URL, with the user of a per-user credential (oauth.Key)
//	issuer      the authorization server that issued the credential, in the clear
//	            for an operator's queries
//	key_id      the id of the key that sealed it (Keys.ID)
//	ciphertext  the nonce, then AES-256-GCM of the credential's JSON
//	updated_at  microseconds since the Unix epoch, as the search log's times
//	version     the layout of ciphertext (rowFormat)
const table = "toolshed_credentials"

// schema creates the table where it is missing. Never change a column here: a
// later layout adds a statement, and bumps rowFormat where the sealed part changes.
var schema = `CREATE TABLE IF NOT EXISTS ` + table + ` (
	key TEXT PRIMARY KEY,
	issuer TEXT NOT NULL,
	key_id TEXT NOT NULL,
	ciphertext {{bytes}} NOT NULL,
	updated_at BIGINT NOT NULL,
	version INTEGER NOT NULL
)`

// lockSpace is the first key of the PostgreSQL advisory locks the store takes
// (the two-int4 form, a key space apart from the search log's one-bigint locks);
// the second is a hash of the row's key, or 0 while the table is created.
const lockSpace = 0x63726564 // "cred"

// SQLiteBusyTimeout is how long an Update on SQLite waits for another process's:
// longer than a refresh may take (oauth's refresh timeout is 30 s), since the one
// waited for may be refreshing.
const SQLiteBusyTimeout = time.Minute

// DefaultConnectTimeout bounds connecting to PostgreSQL when the DSN sets no
// connect_timeout, as the search log's.
const DefaultConnectTimeout = searchlog.DefaultConnectTimeout

// Options configures Open. The zero value reads the keys from the environment.
type Options struct {
	// Keys seal and open the credentials; nil reads them with KeysFromEnv.
	Keys *Keys
	// ConnectLater makes Open of a PostgreSQL database that cannot be reached (down,
	// unreachable, refusing the login) return a Store all the same, as the search
	// log's ConnectLater does: every use tries to reach it (and create its table)
	// again, and fails meanwhile with the reason, so that a gateway replica serves
	// its other servers through an outage. A name that cannot be read, or a SQLite
	// file that cannot be opened, still fails Open.
	ConnectLater bool
}

// Store is an oauth.Store in a SQL database. Make one with Open; Close it.
type Store struct {
	db       *sql.DB
	postgres bool
	keys     *Keys
	where    string

	// ready is set once the table is known to be there (see reach).
	ready   atomic.Bool
	reachMu sync.Mutex
}

// ErrUnreached is wrapped by the errors of a Store opened with ConnectLater while its
// database has not been reached.
var ErrUnreached = errors.New("the credentials database has not been reached yet")

var _ oauth.Store = (*Store)(nil)

// Open opens the credentials store in the database dsn: a SQLite file (a path,
// sqlite:PATH or file:PATH, made with mode 0600 where missing) or PostgreSQL (a
// postgres:// URL or a libpq keyword=value string), and creates its table where it
// is missing. It fails, naming the variable and how to make a key, when there are
// no keys: credentials are never stored unencrypted. With Options.ConnectLater, a
// PostgreSQL database that cannot be reached yet returns the Store together with an
// error wrapping ErrUnreached: the Store is usable, and reaches it when it can.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	keys := opts.Keys
	if keys == nil {
		var err error
		if keys, err = KeysFromEnv(); err != nil {
			return nil, fmt.Errorf("sqlstore: %w", err)
		}
	}
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("sqlstore: no database named for the credentials; name a SQLite file or a postgres:// URL")
	}
	path, isFile, err := searchlog.File(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: the credentials database: %w", err)
	}
	s := &Store{keys: keys}
	if isFile {
		s.where = path
		s.db, err = openSQLite(ctx, path)
	} else {
		s.where = redact.String(dsn)
		s.postgres = true
		s.db, err = openPostgres(ctx, dsn, s.where, opts.ConnectLater)
	}
	if err != nil {
		return nil, err
	}
	if err := s.reach(ctx); err != nil {
		if s.postgres && opts.ConnectLater {
			return s, err // usable: every use tries again
		}
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// reach creates the table where it is missing, once: until it has, each use of the
// Store tries again (see Options.ConnectLater).
func (s *Store) reach(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	s.reachMu.Lock()
	defer s.reachMu.Unlock()
	if s.ready.Load() {
		return nil
	}
	if err := s.create(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrUnreached, err)
	}
	s.ready.Store(true)
	return nil
}

func openSQLite(ctx context.Context, path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlstore: cannot create the directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // owner-only, as the search log's
	if err != nil {
		return nil, fmt.Errorf("sqlstore: cannot open %s: %w", path, err)
	}
	f.Close()
	q := url.Values{"_pragma": {
		"busy_timeout(" + strconv.FormatInt(SQLiteBusyTimeout.Milliseconds(), 10) + ")",
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
	}}
	// Write transactions take the file's write lock at BEGIN (BEGIN IMMEDIATE):
	// that lock is what makes Update atomic across processes.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: cannot open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: cannot open %s: %w", path, err)
	}
	return db, nil
}

func openPostgres(ctx context.Context, dsn, where string, later bool) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w: %s: %s", searchlog.ErrBadDSN, where, redact.Error(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	// Each Update holds a connection while its function runs (a refresh: a
	// request to the issuer), so a few credentials refreshing at once each get one.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(2)
	if later {
		return db, nil // Open's reach says whether it answers
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: cannot connect to %s: %w", where, redact.Wrap(err))
	}
	return db, nil
}

// create makes the table where it is missing; replicas starting together take
// turns (CREATE TABLE IF NOT EXISTS alone can fail on PostgreSQL when two run at once).
func (s *Store) create(ctx context.Context) error {
	bytes := "BLOB"
	if s.postgres {
		bytes = "BYTEA"
	}
	return s.tx(ctx, "", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, strings.ReplaceAll(schema, "{{bytes}}", bytes)); err != nil {
			return s.dbErr("creating the table "+table, err)
		}
		return nil
	})
}

// Where names the database in messages: the SQLite file, or the PostgreSQL DSN with
// its password hidden.
func (s *Store) Where() string { return s.where }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// tx runs fn in a transaction that holds the lock of rowKey (see the package
// comment), and commits it when fn returns nil.
func (s *Store) tx(ctx context.Context, rowKey string, fn func(*sql.Tx) error) error {
	what := "the credential for " + rowKey
	if rowKey == "" {
		what = "the table " + table
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr("locking "+what, err)
	}
	if s.postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(lockSpace), lockOf(rowKey)); err != nil {
			tx.Rollback()
			return s.dbErr("locking "+what, err)
		}
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("writing "+what, err)
	}
	return nil
}

// lockOf is the second key of rowKey's advisory lock: a hash of it. Two keys
// that share a hash only take turns.
func lockOf(rowKey string) int32 {
	if rowKey == "" {
		return 0
	}
	h := sha256.Sum256([]byte(rowKey))
	return int32(binary.BigEndian.Uint32(h[:4]))
}

// q adapts a statement written with ? placeholders to the database, as the search
// log's statements are (searchlog.Rebind).
func (s *Store) q(stmt string) string {
	if !s.postgres {
		return stmt
	}
	return searchlog.Rebind(stmt)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// read reads and opens the credential of key; nil when there is none. A broken
// row (see Keys.open) is returned as an error wrapping oauth.ErrNotSignedIn too,
// with present set: it is no credential, and the next sign-in replaces it.
func (s *Store) read(ctx context.Context, q querier, key string) (c *oauth.Credential, present bool, err error) {
	var keyID string
	var sealed []byte
	var format int
	err = q.QueryRowContext(ctx, s.q(`SELECT key_id, ciphertext, version FROM `+table+` WHERE key = ?`), key).Scan(&keyID, &sealed, &format)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.dbErr("reading the credential for "+key, err)
	}
	c, err = s.open(key, keyID, format, sealed)
	return c, true, err
}

func (s *Store) open(key, keyID string, format int, sealed []byte) (*oauth.Credential, error) {
	plain, broken, err := s.keys.open(key, keyID, format, sealed)
	if broken {
		return nil, fmt.Errorf("sqlstore: %s: %w, so it is not used; sign in again (%w)", s.where, err, oauth.ErrNotSignedIn)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", s.where, err)
	}
	var c oauth.Credential
	if err := json.Unmarshal(plain, &c); err != nil {
		// Authenticated, so written by a toolshed: say so without quoting it.
		return nil, fmt.Errorf("sqlstore: %s: the credential for %s decrypts to no credential (%T); sign in again", s.where, key, err)
	}
	c.URL = key
	return &c, nil
}

func (s *Store) dbErr(what string, err error) error {
	return fmt.Errorf("sqlstore: %s in %s: %w", what, s.where, redact.Wrap(err))
}

// Get implements oauth.Store.
func (s *Store) Get(ctx context.Context, serverURL string) (*oauth.Credential, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	key, err := oauth.CanonicalKey(serverURL)
	if err != nil {
		return nil, err
	}
	c, _, err := s.read(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w to %s", oauth.ErrNotSignedIn, key)
	}
	return c, nil
}

// List implements oauth.Store. A credential sealed with a key not at hand fails it,
// saying what to do; a broken one (changed, or copied from another row) is left out,
// as it is no credential.
func (s *Store) List(ctx context.Context) ([]*oauth.Credential, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT key, key_id, ciphertext, version FROM `+table+` WHERE key NOT LIKE ? ORDER BY key`), registrationKey+"%")
	if err != nil {
		return nil, s.dbErr("listing the credentials", err)
	}
	defer rows.Close()
	var out []*oauth.Credential
	for rows.Next() {
		var key, keyID string
		var sealed []byte
		var format int
		if err := rows.Scan(&key, &keyID, &sealed, &format); err != nil {
			return nil, s.dbErr("listing the credentials", err)
		}
		c, err := s.open(key, keyID, format, sealed)
		if errors.Is(err, oauth.ErrNotSignedIn) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("listing the credentials", err)
	}
	return out, nil
}

// Update implements oauth.Store. fn runs within a transaction that holds the
// credential's lock, across every process that shares the database, until what
// it returns is written. A credential written is sealed with the current key,
// whatever key sealed it before. A broken row (changed, or copied from another
// row) is passed to fn as nil, so that signing in again replaces it; a row sealed
// with a key not at hand fails Update, so that a replica with a wrong key does not
// overwrite what the others read.
func (s *Store) Update(ctx context.Context, serverURL string, fn func(*oauth.Credential) (*oauth.Credential, error)) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	key, err := oauth.CanonicalKey(serverURL)
	if err != nil {
		return err
	}
	return s.tx(ctx, key, func(tx *sql.Tx) error {
		old, present, err := s.read(ctx, tx, key)
		if err != nil && !errors.Is(err, oauth.ErrNotSignedIn) {
			return err
		}
		c, err := fn(old)
		if err != nil {
			return err // as it is: the caller's
		}
		if c == nil {
			if !present {
				return nil
			}
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE key = ?`), key); err != nil {
				return s.dbErr("deleting the credential for "+key, err)
			}
			return nil
		}
		return s.write(ctx, tx, key, c)
	})
}

// write seals c and stores it as the row key.
func (s *Store) write(ctx context.Context, tx *sql.Tx, key string, c *oauth.Credential) error {
	c.URL = key
	plain, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.writeSealed(ctx, tx, key, c.Issuer, plain)
}

// writeSealed seals plain and stores it as the row key.
func (s *Store) writeSealed(ctx context.Context, tx *sql.Tx, key, issuer string, plain []byte) error {
	keyID, sealed := s.keys.seal(key, plain)
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO `+table+` (key, issuer, key_id, ciphertext, updated_at, version) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET issuer = excluded.issuer, key_id = excluded.key_id, ciphertext = excluded.ciphertext,
		updated_at = excluded.updated_at, version = excluded.version`),
		key, issuer, keyID, sealed, time.Now().UnixMicro(), rowFormat)
	if err != nil {
		return s.dbErr("writing "+key, err)
	}
	return nil
}

// registrationKey is the row key of the client registered with an issuer: no
// credential's key (a canonical http(s) URL) starts so.
const registrationKey = "registration:"

var _ oauth.RegistrationStore = (*Store)(nil)

// Registration implements oauth.RegistrationStore: the client toolshed registered
// with issuer, kept in the same table, sealed as the credentials are (it may hold a
// client secret), so that every replica signs in as that one client. A row that
// does not open (changed, or sealed with a key not at hand) counts as none: a new
// registration replaces it.
func (s *Store) Registration(ctx context.Context, issuer string) (*oauth.Registration, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	key := registrationKey + issuer
	var keyID string
	var sealed []byte
	var format int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT key_id, ciphertext, version FROM `+table+` WHERE key = ?`), key).Scan(&keyID, &sealed, &format)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.dbErr("reading the registration with "+issuer, err)
	}
	plain, _, err := s.keys.open(key, keyID, format, sealed)
	if err != nil {
		return nil, nil
	}
	var r oauth.Registration
	if json.Unmarshal(plain, &r) != nil || r.Issuer != issuer {
		return nil, nil
	}
	return &r, nil
}

// SetRegistration implements oauth.RegistrationStore.
func (s *Store) SetRegistration(ctx context.Context, issuer string, r *oauth.Registration) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	if r != nil && r.Issuer != issuer {
		return fmt.Errorf("sqlstore: a registration with %s stored under issuer %s", r.Issuer, issuer)
	}
	key := registrationKey + issuer
	return s.tx(ctx, key, func(tx *sql.Tx) error {
		if r == nil {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE key = ?`), key); err != nil {
				return s.dbErr("deleting the registration with "+issuer, err)
			}
			return nil
		}
		plain, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return s.writeSealed(ctx, tx, key, issuer, plain)
	})
}

// Rekey seals anew with the current key every credential sealed with another (the
// previous key of a rotation), and returns how many it rewrote: after it, the
// previous key can be dropped.
func (s *Store) Rekey(ctx context.Context) (int, error) {
	if err := s.reach(ctx); err != nil {
		return 0, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT key FROM `+table+` WHERE key_id <> ?`), s.keys.ID())
	if err != nil {
		return 0, s.dbErr("listing the credentials", err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return 0, s.dbErr("listing the credentials", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, s.dbErr("listing the credentials", err)
	}
	n := 0
	for _, k := range keys {
		var err error
		if issuer, ok := strings.CutPrefix(k, registrationKey); ok {
			var r *oauth.Registration
			if r, err = s.Registration(ctx, issuer); err == nil && r != nil {
				err = s.SetRegistration(ctx, issuer, r)
			}
		} else {
			err = s.Update(ctx, k, func(c *oauth.Credential) (*oauth.Credential, error) { return c, nil })
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
