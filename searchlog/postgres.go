package searchlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolshed/toolshed/internal/redact"
)

// pgStore is a log in PostgreSQL, which several gateway replicas can share.
type pgStore struct {
	pool *pgxpool.Pool
	name string

	// waiting is why a database that could not be reached at Open is not connected
	// yet (Options.ConnectLater), nil once it is: check connects it, at retryAt at the
	// earliest, the wait doubling from minConnectBackoff to maxConnectBackoff. Only
	// Open and then the writer goroutine touch these.
	waiting error
	retryAt time.Time
	backoff time.Duration
}

// DefaultConnectTimeout bounds connecting to PostgreSQL when the URL sets no
// connect_timeout: a server that accepts and never answers must not hold toolshed.
const DefaultConnectTimeout = 10 * time.Second

// The waits between the attempts to connect a database that was down at Open.
const (
	minConnectBackoff = 500 * time.Millisecond
	maxConnectBackoff = 15 * time.Second
)

// openPostgres opens a pool on dsn and connects it. With later, a database that cannot
// be reached is returned all the same, waiting (see check); a dsn pgx cannot read fails
// either way.
func openPostgres(ctx context.Context, dsn string, later bool) (*pgStore, error) {
	name := redact.String(dsn) // see Log.Where
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, name, redact.Error(err)) // pgx quotes what it cannot parse
	}
	cfg.MaxConns = 4
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("searchlog: cannot connect to %s: %w", name, redact.Wrap(err))
	}
	s := &pgStore{pool: pool, name: name}
	if err := pool.Ping(ctx); err != nil {
		if !later {
			pool.Close()
			return nil, fmt.Errorf("searchlog: cannot connect to %s: %w", name, err)
		}
		s.wait(fmt.Errorf("cannot connect to %s: %w", name, redact.Wrap(err)))
	}
	return s, nil
}

// wait notes that the database could not be reached, and when to try again.
func (s *pgStore) wait(err error) {
	s.waiting = err
	s.backoff = min(max(2*s.backoff, minConnectBackoff), maxConnectBackoff)
	s.retryAt = time.Now().Add(s.backoff)
}

// check connects and migrates a database that could not be reached at Open, once its
// wait is over; until then it fails with why, at once, so that the writer keeps the
// records (Log.write) without trying the database each time.
func (s *pgStore) check(ctx context.Context) (bool, error) {
	if s.waiting == nil {
		return false, nil
	}
	if time.Now().Before(s.retryAt) {
		return false, s.waiting
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.wait(fmt.Errorf("cannot connect to %s: %w", s.name, redact.Wrap(err)))
		return false, s.waiting
	}
	if err := migrate(ctx, s, SchemaVersion); err != nil {
		s.wait(fmt.Errorf("%s: %w", s.name, redact.Wrap(err)))
		return false, s.waiting
	}
	s.waiting = nil
	return false, nil
}

func (s *pgStore) where() string       { return s.name }
func (s *pgStore) idColumn() string    { return "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" }
func (s *pgStore) bytesColumn() string { return "BYTEA" }
func (s *pgStore) close()              { s.pool.Close() }

func (s *pgStore) tx(ctx context.Context, fn func(querier) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(pgTx{tx}) })
}

func (s *pgStore) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.pool.Query(ctx, Rebind(q), args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.Exec(ctx, Rebind(q), args...)
	return err
}

// execMany sends the statements in one batch: one round trip, not one per row.
func (t pgTx) execMany(ctx context.Context, q string, args [][]any) error {
	if len(args) == 0 {
		return nil
	}
	q = Rebind(q)
	b := &pgx.Batch{}
	for _, a := range args {
		b.Queue(q, a...)
	}
	return t.tx.SendBatch(ctx, b).Close()
}

func (t pgTx) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := t.tx.Query(ctx, Rebind(q), args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// migrationLock is the key of the advisory lock migrations take, so that replicas
// starting together migrate one after the other.
const migrationLock = 0x746f6f6c73686564 // "toolshed"

func (t pgTx) lock(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock))
	return err
}

// Rebind turns the ? placeholders of the log's SQL into PostgreSQL's $1, $2, ... (the
// log's statements have no ? anywhere else).
func Rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
