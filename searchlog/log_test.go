package searchlog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
)

// backend is a kind of database the tests run the log on.
type backend struct {
	name string
	// dsn names a new, empty database.
	dsn func(t *testing.T) string
}

// backends returns a SQLite file and a PostgreSQL server started for t (see
// pgtest.Stores for a machine without PostgreSQL).
func backends(t *testing.T) []backend {
	var out []backend
	for _, s := range pgtest.Stores(t) {
		out = append(out, backend{s.Name, s.DSN})
	}
	return out
}

// warnings collects what a Log warns about.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, fmt.Sprintf(format, args...))
}

// count returns how many warnings contain s.
func (w *warnings) count(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

func open(t *testing.T, dsn string, opts Options) *Log {
	t.Helper()
	l, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func flush(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func read(t *testing.T, l *Log) ([]Search, []Call) {
	t.Helper()
	s, c, err := l.Read(context.Background(), time.Time{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return s, c
}

// at is a time the databases store exactly (microseconds, UTC).
func at(offset time.Duration) time.Time {
	return time.Now().Add(offset).Truncate(time.Microsecond).UTC()
}

func TestRoundTrip(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := open(t, b.dsn(t), Options{})
			searches := []Search{
				{Time: at(-2 * time.Minute), Source: "gateway", Profile: "dev", Session: "a1b2c3d4e5f6", Subject: "alice", Query: "create github issue", Mode: "bm25",
					Results: []Hit{{Tool: "github__create_issue", Rank: 1}, {Tool: "github__update_issue", Rank: 2}}, Latency: 1234 * time.Microsecond, CatalogTokens: 50000, ResultTokens: 800},
				{Time: at(-time.Minute), Source: "library", Query: "^slack_", Mode: "regex", Error: "invalid_tool_input"},
			}
			calls := []Call{
				{Time: at(-90 * time.Second), Source: "gateway", Profile: "dev", Session: "a1b2c3d4e5f6", Subject: "sha256:" + strings.Repeat("ab", 32), Tool: "github__create_issue", Server: "github",
					Outcome: OutcomeOK, Duration: 250 * time.Millisecond, Rank: 1, Query: "create github issue"},
				{Time: at(-30 * time.Second), Source: "gateway", Tool: "slack__post", Server: "slack", Outcome: OutcomeTimeout, Duration: 30 * time.Second},
			}
			// Queued out of order: Read orders by time.
			l.Search(searches[1])
			l.Call(calls[1])
			l.Search(searches[0])
			l.Call(calls[0])
			flush(t, l)
			gotS, gotC := read(t, l)
			if !reflect.DeepEqual(gotS, searches) {
				t.Errorf("searches:\ngot  %+v\nwant %+v", gotS, searches)
			}
			if !reflect.DeepEqual(gotC, calls) {
				t.Errorf("calls:\ngot  %+v\nwant %+v", gotC, calls)
			}
			// since drops what is older.
			gotS, gotC, err := l.Read(context.Background(), searches[1].Time)
			if err != nil || len(gotS) != 1 || len(gotC) != 1 || gotC[0].Tool != "slack__post" {
				t.Errorf("Read(since) = %+v, %+v, %v; want the last search and call", gotS, gotC, err)
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := open(t, b.dsn(t), Options{})
			call := func(offset time.Duration, tool, outcome, query string) {
				l.Call(Call{Time: at(offset), Source: "gateway", Tool: tool, Server: strings.Split(tool, "__")[0], Outcome: outcome, Query: query, Rank: 1})
			}
			call(-5*time.Hour, "gh__issue", OutcomeOK, "open a bug")
			call(-4*time.Hour, "gh__issue", OutcomeOK, "open a bug")
			call(-3*time.Hour, "gh__issue", OutcomeOK, "file ticket")
			call(-2*time.Hour, "gh__issue", OutcomeOK, "new issue")
			call(-1*time.Hour, "gh__issue", OutcomeToolError, "broken call") // not a success
			call(-1*time.Hour, "gh__issue", OutcomeOK, "")                   // no search led to it
			call(-1*time.Hour, "gh__issue", OutcomeOK, HashQuery("hidden"))  // hashed: no words
			call(-30*time.Minute, "fs__read", OutcomeOK, "read a file")
			flush(t, l)

			got, err := l.Evidence(context.Background(), EvidenceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []Evidence{
				{Tool: "fs__read", Query: "read a file", Count: 1, Last: at(0)},
				{Tool: "gh__issue", Query: "new issue", Count: 1, Last: at(0)},
				{Tool: "gh__issue", Query: "file ticket", Count: 1, Last: at(0)},
				{Tool: "gh__issue", Query: "open a bug", Count: 2, Last: at(0)},
			}
			if len(got) != len(want) {
				t.Fatalf("Evidence = %+v, want %d entries", got, len(want))
			}
			for i := range want {
				if got[i].Tool != want[i].Tool || got[i].Query != want[i].Query || got[i].Count != want[i].Count {
					t.Errorf("Evidence[%d] = %+v, want %+v", i, got[i], want[i])
				}
			}
			if d := time.Since(got[3].Last); d < 4*time.Hour-time.Minute || d > 4*time.Hour+time.Minute {
				t.Errorf("Last of the twice-found query = %v ago, want the newer call (4h ago)", d)
			}

			got, err = l.Evidence(context.Background(), EvidenceOptions{PerTool: 2})
			if err != nil || len(got) != 3 || got[1].Query != "new issue" || got[2].Query != "file ticket" {
				t.Errorf("Evidence(PerTool: 2) = %+v, %v; want fs__read's query and gh__issue's two newest", got, err)
			}
			got, err = l.Evidence(context.Background(), EvidenceOptions{MinCount: 2})
			if err != nil || len(got) != 1 || got[0].Query != "open a bug" {
				t.Errorf("Evidence(MinCount: 2) = %+v, %v; want only the query found twice", got, err)
			}
			got, err = l.Evidence(context.Background(), EvidenceOptions{Since: time.Now().Add(-150 * time.Minute)})
			if err != nil || len(got) != 2 {
				t.Errorf("Evidence(Since: 2.5h ago) = %+v, %v; want the two newer queries", got, err)
			}
		})
	}
}

// TestBatching: records are written once a batch is full, without waiting for the
// flush interval; what does not fill a batch waits for it (or Flush).
func TestBatching(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := open(t, b.dsn(t), Options{BatchSize: 10, FlushInterval: time.Hour})
			for i := range 25 {
				l.Search(Search{Source: "library", Query: fmt.Sprint("q", i), Mode: "bm25"})
			}
			deadline := time.Now().Add(time.Minute)
			var got []Search
			for time.Now().Before(deadline) {
				if got, _ = read(t, l); len(got) >= 20 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(got) != 20 {
				t.Fatalf("before Flush: %d searches written, want the two full batches (20)", len(got))
			}
			flush(t, l)
			if got, _ = read(t, l); len(got) != 25 {
				t.Fatalf("after Flush: %d searches written, want 25", len(got))
			}
		})
	}
}

func TestQueryPrivacy(t *testing.T) {
	const q = "rotate the prod database password"
	hashed := "sha256:99e782724c9e8cd0efd7b222938f929afa244c50b216ac81834a6c0c8f012a29"
	for _, b := range backends(t) {
		for _, mode := range []string{"", QueriesPlain, QueriesHash, QueriesOff} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				l := open(t, b.dsn(t), Options{Queries: mode})
				l.Search(Search{Source: "gateway", Query: q, Mode: "bm25"})
				l.Call(Call{Source: "gateway", Tool: "db__rotate", Server: "db", Outcome: OutcomeOK, Rank: 1, Query: q})
				flush(t, l)
				s, c := read(t, l)
				// echo -n "rotate the prod database password" | sha256sum
				want := map[string]string{"": q, QueriesPlain: q, QueriesHash: hashed, QueriesOff: ""}[mode]
				if len(s) != 1 || s[0].Query != want || len(c) != 1 || c[0].Query != want {
					t.Fatalf("stored %+v and %+v, want query %q in both", s, c, want)
				}
				ev, err := l.Evidence(context.Background(), EvidenceOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if wantEv := mode == "" || mode == QueriesPlain; (len(ev) == 1) != wantEv {
					t.Errorf("Evidence = %+v; want evidence only from plain queries", ev)
				}
			})
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), Options{Queries: "hashed"}); err == nil || !strings.Contains(err.Error(), "plain, hash or off") {
		t.Errorf("Open with Queries %q: err = %v, want one naming the modes", "hashed", err)
	}
}

func TestRetention(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			l := open(t, dsn, Options{MaxAge: -1, MaxRows: -1})
			for i := range 6 {
				age := time.Duration(6-i) * time.Hour // 6h ... 1h old
				l.Search(Search{Time: at(-age), Source: "gateway", Query: fmt.Sprint("q", i)})
				l.Call(Call{Time: at(-age), Source: "gateway", Tool: fmt.Sprint("t", i), Outcome: OutcomeOK})
			}
			flush(t, l)
			if err := l.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			// A log prunes when it starts, then every PruneInterval.
			l = open(t, dsn, Options{MaxAge: 270 * time.Minute, MaxRows: -1})
			flush(t, l)
			s, c := read(t, l)
			if len(s) != 4 || s[0].Query != "q2" || len(c) != 4 || c[0].Tool != "t2" {
				t.Fatalf("after MaxAge 4.5h: %d searches (first %+v), %d calls; want the 4 newer of each", len(s), s, len(c))
			}
			l.Close(context.Background())
			l = open(t, dsn, Options{MaxRows: 2, PruneInterval: 10 * time.Millisecond})
			l.Search(Search{Source: "gateway", Query: "newest"})
			flush(t, l)
			deadline := time.Now().Add(time.Minute)
			for time.Now().Before(deadline) {
				if s, c = read(t, l); len(s) == 2 && len(c) == 2 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(s) != 2 || s[0].Query != "q5" || s[1].Query != "newest" || len(c) != 2 || c[1].Tool != "t5" {
				t.Fatalf("after MaxRows 2: %+v and %+v; want the 2 newest of each", s, c)
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name+"/v0", func(t *testing.T) {
			// A database toolshed never wrote to, with a table of someone else's.
			dsn := b.dsn(t)
			st := rawStore(t, dsn)
			exec(t, st, `CREATE TABLE notes (body TEXT)`, `INSERT INTO notes (body) VALUES ('keep me')`)
			st.close()
			l := open(t, dsn, Options{})
			if v := schemaVersion(t, l.st); v != SchemaVersion {
				t.Errorf("schema version %d, want %d", v, SchemaVersion)
			}
			rows, err := l.st.query(ctx, `SELECT body FROM notes`)
			if err != nil {
				t.Fatal(err)
			}
			var body string
			for rows.Next() {
				rows.Scan(&body)
			}
			rows.Close()
			if body != "keep me" {
				t.Errorf("the other table's row is %q, want it kept", body)
			}
		})
		t.Run(b.name+"/v1", func(t *testing.T) {
			// A database at version 1 with a record: migrating keeps it.
			dsn := b.dsn(t)
			st := rawStore(t, dsn)
			if err := migrate(ctx, st, 1); err != nil {
				t.Fatal(err)
			}
			exec(t, st, fmt.Sprintf(`INSERT INTO calls (time, source, profile, session, tool, server, outcome, duration_us, rank, query) VALUES (%d, 'gateway', '', '', 'gh__issue', 'gh', 'ok', 5, 1, 'open a bug')`, at(0).UnixMicro()))
			st.close()
			l := open(t, dsn, Options{})
			if v := schemaVersion(t, l.st); v != SchemaVersion {
				t.Errorf("schema version %d, want %d", v, SchemaVersion)
			}
			ev, err := l.Evidence(ctx, EvidenceOptions{})
			if err != nil || len(ev) != 1 || ev[0].Query != "open a bug" {
				t.Errorf("Evidence after migrating = %+v, %v; want the version 1 call", ev, err)
			}
			// Opening again migrates nothing.
			l.Close(ctx)
			open(t, dsn, Options{})
		})
		t.Run(b.name+"/v3", func(t *testing.T) {
			// A database of the schema before subjects, with a search and a call:
			// migrating keeps them, with no subject, and new records carry theirs.
			dsn := b.dsn(t)
			st := rawStore(t, dsn)
			if err := migrate(ctx, st, 3); err != nil {
				t.Fatal(err)
			}
			old := at(-time.Minute)
			exec(t, st,
				fmt.Sprintf(`INSERT INTO searches (time, source, profile, session, query, mode, results, latency_us, error, catalog_tokens, result_tokens) VALUES (%d, 'gateway', 'dev', 's1', 'open a bug', 'bm25', '[{"tool":"gh__issue","rank":1}]', 7, '', 100, 10)`, old.UnixMicro()),
				fmt.Sprintf(`INSERT INTO calls (time, source, profile, session, tool, server, outcome, duration_us, rank, query) VALUES (%d, 'gateway', 'dev', 's1', 'gh__issue', 'gh', 'ok', 5, 1, 'open a bug')`, old.UnixMicro()))
			st.close()
			l := open(t, dsn, Options{})
			if v := schemaVersion(t, l.st); v != SchemaVersion {
				t.Errorf("schema version %d, want %d", v, SchemaVersion)
			}
			l.Search(Search{Time: at(0), Source: "gateway", Session: "s2", Subject: "bob", Query: "deploy", Mode: "bm25"})
			l.Call(Call{Time: at(0), Source: "gateway", Session: "s2", Subject: "bob", Tool: "ci__deploy", Server: "ci", Outcome: OutcomeOK})
			flush(t, l)
			searches, calls := read(t, l)
			if len(searches) != 2 || searches[0].Query != "open a bug" || searches[0].Subject != "" || len(searches[0].Results) != 1 || searches[1].Subject != "bob" {
				t.Errorf("searches after migrating: %+v; want the old one without a subject, then bob's", searches)
			}
			if len(calls) != 2 || calls[0].Tool != "gh__issue" || calls[0].Subject != "" || calls[1].Subject != "bob" {
				t.Errorf("calls after migrating: %+v; want the old one without a subject, then bob's", calls)
			}
		})
		t.Run(b.name+"/newer", func(t *testing.T) {
			dsn := b.dsn(t)
			open(t, dsn, Options{}).Close(ctx)
			st := rawStore(t, dsn)
			exec(t, st, `UPDATE schema_version SET version = 99`)
			st.close()
			_, err := Open(ctx, dsn, Options{})
			if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "upgrade toolshed") {
				t.Fatalf("Open of a version 99 database: err = %v, want ErrNewerSchema saying what to do", err)
			}
			st = rawStore(t, dsn)
			defer st.close()
			if v := schemaVersion(t, st); v != 99 {
				t.Errorf("the refused database's version became %d, want it untouched (99)", v)
			}
		})
	}
}

func rawStore(t *testing.T, dsn string) store {
	t.Helper()
	opts, _ := Options{}.withDefaults()
	st, err := openStore(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func exec(t *testing.T, st store, stmts ...string) {
	t.Helper()
	err := st.tx(context.Background(), func(q querier) error {
		for _, s := range stmts {
			if err := q.exec(context.Background(), s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func schemaVersion(t *testing.T, st store) int {
	t.Helper()
	var v int
	err := st.tx(context.Background(), func(q querier) (err error) {
		v, err = version(context.Background(), q)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
