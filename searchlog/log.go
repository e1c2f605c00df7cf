package searchlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Query logging modes (Options.Queries).
const (
	QueriesPlain = "plain" // queries are stored as sent (the default)
	QueriesHash  = "hash"  // "sha256:" and the hex SHA-256 of the query
	QueriesOff   = "off"   // "": the log keeps which tools were found and called, not why
)

// Defaults of Options.
const (
	DefaultMaxAge        = 90 * 24 * time.Hour
	DefaultMaxRows       = 1_000_000
	DefaultQueueSize     = 4096
	DefaultBatchSize     = 256
	DefaultFlushInterval = time.Second
	DefaultPruneInterval = 10 * time.Minute
	DefaultBusyTimeout   = 5 * time.Second
)

// maxQueryBytes bounds a stored query: search refuses longer ones anyway, and a log
// must not grow by what a client sends.
const maxQueryBytes = 2048

// Options configure a Log. The zero value is the default.
type Options struct {
	// Queries is QueriesPlain (or ""), QueriesHash or QueriesOff. Hashing is a plain
	// SHA-256, with no key: it hides a query from whoever reads the log but not from
	// one who guesses it, and the same query hashes the same on every replica, so
	// toolshed stats can still count repeats.
	Queries string
	// MaxAge is how long records are kept (DefaultMaxAge when 0, forever when
	// negative), MaxRows how many searches and how many calls (DefaultMaxRows when
	// 0, no limit when negative): older ones are pruned every PruneInterval.
	MaxAge  time.Duration
	MaxRows int
	// QueueSize bounds the records waiting to be written (DefaultQueueSize when 0,
	// and at least two batches: the queue gathers each batch before the writer takes
	// it, and goes on filling meanwhile): when the writer falls behind, new records
	// are dropped, counted and said (see loss.go), rather than slow a search.
	QueueSize int
	// BatchSize is how many records one transaction writes at most, and
	// FlushInterval how long a record waits at most before it is written.
	BatchSize     int
	FlushInterval time.Duration
	PruneInterval time.Duration
	// BusyTimeout is how long a SQLite write waits for another process's lock
	// (DefaultBusyTimeout when 0).
	BusyTimeout time.Duration
	// ConnectLater makes Open of a PostgreSQL database that cannot be reached (down,
	// unreachable, refusing the login) return a Log all the same: it says so once
	// (Logf), keeps up to QueueSize records meanwhile, tries to connect again in the
	// background, waiting longer each time up to 15 s, and once it is connected (and
	// migrated) writes what it kept and all that follows. A gateway replica uses it, so
	// that a database outage and a restart do not keep it from serving. A name that
	// cannot be read still fails Open, and so does a SQLite file that cannot be opened.
	ConnectLater bool
	// Logf receives the log's warnings: a store that fails (once until it works
	// again), and records lost, with their count, when they are lost (at most once a
	// minute while losses go on, and at exit; see loss.go). Nil means slog's default
	// logger.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() (Options, error) {
	switch o.Queries {
	case "":
		o.Queries = QueriesPlain
	case QueriesPlain, QueriesHash, QueriesOff:
	default:
		return o, fmt.Errorf("searchlog: unknown query logging %q; use plain, hash or off", o.Queries)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.QueueSize, DefaultQueueSize)
	def(&o.BatchSize, DefaultBatchSize)
	// The writer is woken when a batch is queued (see enqueue): a smaller queue would
	// drop records with the writer idle, and one of a batch those that come before the
	// writer takes it.
	o.QueueSize = max(o.QueueSize, 2*o.BatchSize)
	defDur(&o.FlushInterval, DefaultFlushInterval)
	defDur(&o.PruneInterval, DefaultPruneInterval)
	defDur(&o.BusyTimeout, DefaultBusyTimeout)
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { slog.Warn(fmt.Sprintf(format, args...)) }
	}
	return o, nil
}

// A Log records searches and calls. Search and Call only queue a record and never
// block; a goroutine of the Log writes the queue in batches, one transaction each. A
// store that fails (full, locked, deleted, unreachable) costs the records written
// meanwhile and one warning, and the Log goes on writing once the store works again.
// A nil *Log records nothing, so callers need not check whether logging is on. A Log
// is safe for concurrent use.
type Log struct {
	st   store
	opts Options
	// queue holds the records not taken by the writer yet, at most QueueSize. The
	// writer is woken (full) only when a batch is ready; otherwise it takes the queue
	// every FlushInterval. A channel of records would wake it for each one: on a
	// gateway that is a goroutine hand-off, and a thread woken, per tool call.
	qmu   sync.Mutex
	queue []record
	spare []record // an empty array for the queue, given back by the writer
	full  chan struct{}

	closed atomic.Bool
	// unreached is set while the store has not been reached since Open (see
	// Options.ConnectLater): reads then have nothing to read. down is set while the
	// store fails (failing, for other goroutines: see Writing).
	unreached atomic.Bool
	down      atomic.Bool
	dropped   atomic.Int64 // records dropped because the queue was full
	unwritten atomic.Int64 // records the writer holds and has not written (for Close)
	givenUp   atomic.Int64 // records a failing store did not take, given up (see loss.go)

	flushes chan chan error
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once

	// Owned by the writer goroutine.
	pending [][]record // batches that failed, oldest first, retried apart from new ones
	failing bool       // a write failed (and was warned about), and some records wait
	loss    losses     // what was lost, and what of it was said (see loss.go)
}

// record is a Search or a Call waiting to be written.
type record struct {
	call   bool
	search Search
	c      Call
}

// Open opens (creating and migrating) the log named by dsn: "" for the default SQLite
// file (see DefaultPath), a path, "sqlite:PATH" or "file:PATH[?_pragma=...]" for a
// SQLite file, "postgres://...", "postgresql://..." or a libpq keyword=value string
// (host=... dbname=...) for PostgreSQL. It fails for a
// database it cannot open or one a newer toolshed migrated (ErrNewerSchema). Close the
// Log to write what it still holds.
func Open(ctx context.Context, dsn string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if pg, ok := st.(*pgStore); ok && pg.waiting != nil {
		// ConnectLater: the writer migrates it once it connects (pgStore.check).
		l := start(st, opts, true)
		opts.Logf("search log: %v; serving without it meanwhile, and connecting again in the background: searches and calls are written once it is reached (up to %d records are kept until then)", pg.waiting, opts.QueueSize)
		return l, nil
	}
	if err := migrate(ctx, st, SchemaVersion); err != nil {
		st.close()
		return nil, fmt.Errorf("searchlog: %s: %w", st.where(), err)
	}
	return start(st, opts, false), nil
}

func openStore(ctx context.Context, dsn string, opts Options) (store, error) {
	t, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if t.postgres != "" {
		return openPostgres(ctx, t.postgres, opts.ConnectLater)
	}
	return openSQLite(ctx, t, opts.BusyTimeout)
}

// start starts the writer of a Log on st; unreached when st could not be reached yet
// (see Options.ConnectLater).
func start(st store, opts Options, unreached bool) *Log {
	l := &Log{
		st:      st,
		opts:    opts,
		full:    make(chan struct{}, 1),
		flushes: make(chan chan error),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		failing: unreached,
	}
	l.unreached.Store(unreached)
	l.down.Store(unreached)
	go l.run()
	return l
}

// Where names the database the log writes to (a file, or a PostgreSQL URL without its
// password).
func (l *Log) Where() string { return l.st.where() }

// Search queues a search to be written. It never blocks: when the queue is full, the
// record is dropped (and counted). s.Results must not be modified afterwards.
func (l *Log) Search(s Search) {
	if l == nil || l.closed.Load() {
		return
	}
	if s.Time.IsZero() {
		s.Time = time.Now()
	}
	l.enqueue(record{search: s})
}

// Call queues a call to be written, as Search does.
func (l *Log) Call(c Call) {
	if l == nil || l.closed.Load() {
		return
	}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	l.enqueue(record{call: true, c: c})
}

func (l *Log) enqueue(r record) {
	l.qmu.Lock()
	n := len(l.queue)
	kept := n < l.opts.QueueSize
	if kept {
		l.queue = append(l.queue, r)
		n++
	}
	l.qmu.Unlock()
	if !kept {
		l.dropped.Add(1)
		return
	}
	if n >= l.opts.BatchSize {
		select {
		case l.full <- struct{}{}:
		default: // the writer is told already
		}
	}
}

// take removes the records queued and returns them: all of them, or with batches only
// the full batches, the rest staying queued for the flush interval.
// The queue's next array is the one the writer gave back (recycle), so that queueing
// allocates nothing once the queue has grown.
func (l *Log) take(batches bool) []record {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	q := l.queue
	n := len(q)
	if batches {
		n -= n % l.opts.BatchSize
	}
	l.queue = append(l.spare[:0], q[n:]...)
	l.spare = nil
	return q[:n]
}

// recycle gives back the array of records the writer has written, for take.
func (l *Log) recycle(recs []record) {
	clear(recs[:cap(recs)])
	l.qmu.Lock()
	defer l.qmu.Unlock()
	l.spare = recs[:0]
}

// Writing reports whether the log writes to its database: false from a write that
// failed until one succeeds again with nothing left waiting, and while a database that
// could not be reached at Open is not connected yet (Options.ConnectLater).
func (l *Log) Writing() bool { return l != nil && !l.down.Load() }

// Dropped reports how many records were dropped because the queue was full.
func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// ErrClosed is returned by Flush after Close.
var ErrClosed = errors.New("searchlog: the log is closed")

// Flush writes every record queued before it was called, and reports the error of
// that write (nil when it succeeded).
func (l *Log) Flush(ctx context.Context) error {
	if l == nil {
		return nil
	}
	reply := make(chan error, 1)
	select {
	case l.flushes <- reply:
	case <-l.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking records, writes those queued, and closes the database. When ctx
// ends first, what is not written yet is lost, and the error (wrapping ctx's) says how
// many records that is.
func (l *Log) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.closed.Store(true)
	l.stopped.Do(func() { close(l.stop) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		l.qmu.Lock()
		n := int64(len(l.queue)) + l.unwritten.Load()
		l.qmu.Unlock()
		return fmt.Errorf("searchlog: %d records not written to %s yet, lost: %w", n, l.st.where(), ctx.Err())
	}
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	defer l.st.close()
	flush := time.NewTicker(l.opts.FlushInterval)
	defer flush.Stop()
	prune := time.NewTicker(l.opts.PruneInterval)
	defer prune.Stop()
	ctx := context.Background()
	l.prune(ctx)
	for {
		select {
		case <-l.full:
			l.writeAll(ctx, l.take(true))
		case <-flush.C:
			l.writeAll(ctx, l.take(false))
		case <-prune.C:
			l.prune(ctx)
		case reply := <-l.flushes:
			reply <- l.writeAll(ctx, l.take(false))
		case <-l.stop:
			l.writeAll(ctx, l.take(false))
			l.reportLoss(true, l.kept())
			return
		}
	}
}

// writeAll writes the batches that failed before, oldest first, until one fails
// again, then recs, in batches of at most BatchSize, each in a transaction of its own,
// then gives recs back (recycle). A batch that fails is kept for the next write, and
// what is kept is bounded by QueueSize, the oldest lost beyond it (and said so, see
// loss.go). Keeping the failed batches apart from the new records means that a store
// that cannot take a large batch (a full disk) still takes the small ones that fit,
// and that the writer does not retry all it keeps with every new record.
func (l *Log) writeAll(ctx context.Context, recs []record) error {
	defer l.recycle(recs)
	l.unwritten.Store(int64(len(recs) + l.kept()))
	defer func() { l.unwritten.Store(int64(l.kept())) }()
	l.noteDrops()
	var err error
	wrote := false
	if l.unreached.Load() && len(l.pending) == 0 && len(recs) == 0 {
		// Nothing to write, but a store not reached yet is tried all the same, so
		// that it is connected (and reads work) before the first record comes.
		cctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err = l.check(cctx)
		cancel()
		wrote = err == nil
	}
	old := l.pending
	l.pending = nil
	for i, batch := range old {
		if e := l.write(ctx, batch); e != nil {
			err = e
			l.pending = append(l.pending, old[i:]...)
			break
		}
		wrote = true
	}
	for rest := recs; len(rest) > 0; {
		n := min(len(rest), l.opts.BatchSize)
		if e := l.write(ctx, rest[:n]); e != nil {
			err = errors.Join(err, e)
			// recs is recycled: keep a copy.
			l.pending = append(l.pending, append([]record(nil), rest[:n]...))
		} else {
			wrote = true
		}
		rest = rest[n:]
	}
	l.boundPending()
	if wrote && l.failing && len(l.pending) == 0 {
		l.failing = false
		l.down.Store(false)
		if l.unreached.Swap(false) {
			l.opts.Logf("search log: connected to %s: writing to it from now on (%d records were lost meanwhile)", l.st.where(), l.loss.total)
		} else {
			l.opts.Logf("search log: writing to %s again (%d records were lost meanwhile)", l.st.where(), l.loss.total)
		}
		l.loss = losses{dropsSeen: l.loss.dropsSeen}
	}
	l.reportLoss(false, 0)
	return err
}

// writeTimeout bounds one write, connecting included: a database that accepts and
// never answers must not hold the writer (its records are kept, as for any failure).
const writeTimeout = 30 * time.Second

// check sees that the store is still the one opened, or connects it (see store.check).
func (l *Log) check(ctx context.Context) error {
	reopened, err := l.st.check(ctx)
	if reopened {
		l.opts.Logf("search log: %s was deleted or replaced while toolshed used it; a new one was created", l.st.where())
	}
	return err
}

// write writes batch in one transaction, and warns once about a store that fails until
// it works again.
func (l *Log) write(ctx context.Context, batch []record) error {
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	err := l.check(ctx)
	if err == nil {
		err = l.insert(ctx, batch)
	}
	if err != nil {
		l.loss.err = err
		if !l.failing {
			l.failing = true
			l.down.Store(true)
			l.opts.Logf("search log: cannot write to %s: %v; searches and calls go on, and are written once it works again (up to %d records are kept meanwhile)", l.st.where(), err, l.opts.QueueSize)
		}
	}
	return err
}

const (
	insertSearch = `INSERT INTO searches (time, source, profile, session, query, mode, results, latency_us, error, catalog_tokens, result_tokens, subject) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertCall   = `INSERT INTO calls (time, source, profile, session, tool, server, outcome, duration_us, rank, query, subject) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// insert writes recs in one transaction.
func (l *Log) insert(ctx context.Context, recs []record) error {
	var searches, calls [][]any
	for _, r := range recs {
		if r.call {
			c := r.c
			calls = append(calls, []any{c.Time.UnixMicro(), text(c.Source), text(c.Profile), text(c.Session), text(c.Tool), text(c.Server), text(c.Outcome), c.Duration.Microseconds(), int64(c.Rank), l.query(c.Query), text(c.Subject)})
			continue
		}
		s := r.search
		hits := make([]hitJSON, len(s.Results))
		for i, h := range s.Results {
			hits[i] = hitJSON{text(h.Tool), h.Rank}
		}
		results, _ := json.Marshal(hits) // never fails: strings and ints
		searches = append(searches, []any{s.Time.UnixMicro(), text(s.Source), text(s.Profile), text(s.Session), l.query(s.Query), text(s.Mode), string(results), s.Latency.Microseconds(), text(s.Error), int64(s.CatalogTokens), int64(s.ResultTokens), text(s.Subject)})
	}
	return l.st.tx(ctx, func(q querier) error {
		if err := q.execMany(ctx, insertSearch, searches); err != nil {
			return err
		}
		return q.execMany(ctx, insertCall, calls)
	})
}

// hitJSON is one element of searches.results.
type hitJSON struct {
	Tool string `json:"tool"`
	Rank int    `json:"rank"`
}

// query is what the log stores of a query, under Options.Queries.
func (l *Log) query(q string) string {
	if q == "" {
		return ""
	}
	switch l.opts.Queries {
	case QueriesOff:
		return ""
	case QueriesHash:
		return HashQuery(q)
	}
	return text(truncate(q, maxQueryBytes))
}

// HashQuery is what the log stores of a query when queries are hashed: "sha256:"
// followed by the hex SHA-256 of the query.
func HashQuery(q string) string {
	sum := sha256.Sum256([]byte(q))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// text makes s storable in any database: valid UTF-8 without NUL (PostgreSQL's text
// refuses both, and one bad record must not fail its whole batch).
func text(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// prune deletes what is older than MaxAge, and the oldest searches and calls beyond
// MaxRows each. A failure is left to the writes to report.
func (l *Log) prune(ctx context.Context) {
	if l.unreached.Load() {
		return // nothing to prune, and no waiting for the database here
	}
	// A first prune of a large log can take a while; one that does not end in this
	// time is given up, and done at the next.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_ = l.st.tx(ctx, func(q querier) error {
		for _, table := range []string{"searches", "calls"} {
			if l.opts.MaxAge > 0 {
				if err := q.exec(ctx, `DELETE FROM `+table+` WHERE time < ?`, time.Now().Add(-l.opts.MaxAge).UnixMicro()); err != nil {
					return err
				}
			}
			if l.opts.MaxRows > 0 {
				if err := q.exec(ctx, `DELETE FROM `+table+` WHERE id <= (SELECT id FROM `+table+` ORDER BY id DESC LIMIT 1 OFFSET ?)`, int64(l.opts.MaxRows)); err != nil {
					return err
				}
			}
		}
		if l.opts.MaxAge > 0 {
			// Vectors no toolshed has loaded for MaxAge: tools that left every catalog.
			return q.exec(ctx, `DELETE FROM tool_vectors WHERE used < ?`, time.Now().Add(-l.opts.MaxAge).UnixMicro())
		}
		return nil
	})
}
