package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

func openSearchLog(t *testing.T, path string, opts searchlog.Options) *searchlog.Log {
	t.Helper()
	l, err := searchlog.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// TestSearchLogRecords: every tool_search and every call, direct or through
// tool_call, is recorded, a call with the rank and query at which its own session's
// search returned the tool (describing it in between changes nothing).
func TestSearchLogRecords(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, SearchLog: log})
	a, b := h.client("", nil), h.client("", nil)

	res := call(t, a, "tool_search", map[string]any{"query": "add two numbers", "limit": 3})
	var found struct{ Matches []struct{ Name string } }
	json.Unmarshal([]byte(resultText(res)), &found)
	if len(found.Matches) == 0 || found.Matches[0].Name != "alpha__add" {
		t.Fatalf("tool_search = %s", resultText(res))
	}
	call(t, a, "tool_describe", map[string]any{"name": "alpha__add"})
	call(t, a, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 40, "b": 2}})
	call(t, a, "tool_call", map[string]any{"name": "alpha__fail", "arguments": map[string]any{}})
	call(t, b, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": "x"}}) // bad arguments
	call(t, b, "tool_search", map[string]any{"query": ""})                                               // an error

	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(searches) != 2 || len(calls) != 3 {
		t.Fatalf("recorded %d searches and %d calls, want 2 and 3:\n%+v\n%+v", len(searches), len(calls), searches, calls)
	}
	s := searches[0]
	tag := regexp.MustCompile(`^[0-9a-f]{12}$`)
	if s.Source != "gateway" || s.Query != "add two numbers" || s.Mode != "bm25" || s.Error != "" || !tag.MatchString(s.Session) {
		t.Errorf("search = %+v", s)
	}
	if len(s.Results) != len(found.Matches) || s.Results[0] != (searchlog.Hit{Tool: "alpha__add", Rank: 1}) {
		t.Errorf("search results = %+v, want what tool_search returned, alpha__add first", s.Results)
	}
	if s.Latency <= 0 || s.CatalogTokens <= 0 || s.ResultTokens <= 0 || s.ResultTokens > s.CatalogTokens {
		t.Errorf("search latency %v, tokens %d of %d", s.Latency, s.ResultTokens, s.CatalogTokens)
	}
	if e := searches[1]; e.Error != "invalid_tool_input" || e.Session == s.Session || len(e.Results) != 0 {
		t.Errorf("the failed search of the other session = %+v", e)
	}
	want := []searchlog.Call{
		{Tool: "alpha__add", Server: "alpha", Outcome: searchlog.OutcomeOK, Rank: 1, Query: "add two numbers", Session: s.Session},
		{Tool: "alpha__fail", Server: "alpha", Outcome: searchlog.OutcomeToolError, Session: s.Session},
		{Tool: "alpha__add", Server: "alpha", Outcome: searchlog.OutcomeFailed, Session: searches[1].Session}, // not this session's search
	}
	for i, c := range calls {
		if c.Source != "gateway" || c.Tool != want[i].Tool || c.Server != want[i].Server || c.Outcome != want[i].Outcome ||
			c.Rank != want[i].Rank || c.Query != want[i].Query || c.Session != want[i].Session || c.Duration <= 0 {
			t.Errorf("call %d = %+v\nwant %+v", i, c, want[i])
		}
	}
	ev, err := log.Evidence(ctx, searchlog.EvidenceOptions{})
	if err != nil || len(ev) != 1 || ev[0].Tool != "alpha__add" || ev[0].Query != "add two numbers" {
		t.Errorf("Evidence = %+v, %v; want the search that led to the successful call", ev, err)
	}
}

// TestSearchLogLockedStore: a store another process holds locked neither fails nor
// holds up searches and calls; what they recorded is written once it is released.
func TestSearchLogLockedStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	// A write waits for the lock far longer than the test: were the gateway to wait
	// for the log, it would hang.
	log := openSearchLog(t, path, searchlog.Options{BusyTimeout: time.Hour, FlushInterval: time.Millisecond, Logf: func(string, ...any) {}})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, SearchLog: log})
	cs := h.client("", nil)

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if res := call(t, cs, "tool_search", map[string]any{"query": "add two numbers"}); res.IsError {
			t.Fatalf("tool_search failed with the log locked: %s", resultText(res))
		}
		if res := call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 1, "b": 2}}); res.IsError || resultText(res) != "3" {
			t.Fatalf("tool_call failed with the log locked: %s", resultText(res))
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil || len(searches) != 20 || len(calls) != 20 {
		t.Fatalf("after the lock: %d searches and %d calls (%v), want 20 of each", len(searches), len(calls), err)
	}
}

// TestSearchLogDirectCall: a call of a listed tool is recorded as one through
// tool_call is.
func TestSearchLogDirectCall(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off, SearchLog: log})
	cs := h.client("", nil)
	if res := call(t, cs, "alpha__add", map[string]any{"a": 1, "b": 2}); res.IsError {
		t.Fatalf("alpha__add: %s", resultText(res))
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil || len(searches) != 0 || len(calls) != 1 {
		t.Fatalf("recorded %+v and %+v (%v), want the one call", searches, calls, err)
	}
	if c := calls[0]; c.Tool != "alpha__add" || c.Server != "alpha" || c.Outcome != searchlog.OutcomeOK || c.Rank != 0 || c.Query != "" {
		t.Errorf("call = %+v", c)
	}
}

// BenchmarkSearchLogged measures what the search log adds to a tool_search: each
// iteration searches once through a gateway without a log and once through one that
// records to a SQLite file, interleaved so both see the same machine (the SDK's client
// on OS pipes, in the benchmark's process). The added latency is the difference of
// the medians.
func BenchmarkSearchLogged(b *testing.B) {
	log, err := searchlog.Open(context.Background(), filepath.Join(b.TempDir(), "log.db"), searchlog.Options{Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close(context.Background())
	start := func(l *searchlog.Log) *gateway.Gateway {
		return benchGatewayWith(b, gateway.Options{Mode: policy.On, SearchLog: l, Log: io.Discard})
	}
	plain, logged := pipeClient(b, start(nil), ""), pipeClient(b, start(log), "")
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "add two numbers"}}
	for range 50 {
		plain.CallTool(ctx, params)
		logged.CallTool(ctx, params)
	}
	var pLat, lLat []time.Duration
	b.ResetTimer()
	timed := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for i := range b.N {
		// Each goes first every other time, so that neither gains from the order.
		if i%2 == 0 {
			pLat = append(pLat, timed(plain))
			lLat = append(lLat, timed(logged))
		} else {
			lLat = append(lLat, timed(logged))
			pLat = append(pLat, timed(plain))
		}
	}
	b.StopTimer()
	p50, p99 := percentiles(pLat)
	l50, l99 := percentiles(lLat)
	b.ReportMetric(p50, "nolog-p50-µs")
	b.ReportMetric(p99, "nolog-p99-µs")
	b.ReportMetric(l50, "logged-p50-µs")
	b.ReportMetric(l99, "logged-p99-µs")
	b.ReportMetric(l50-p50, "added-p50-µs")
}

// searchFinds reports whether tool_search for query returns tool first.
func searchFinds(t *testing.T, cs *mcp.ClientSession, query, tool string) bool {
	t.Helper()
	res := call(t, cs, "tool_search", map[string]any{"query": query, "limit": 3})
	var found struct{ Matches []struct{ Name string } }
	json.Unmarshal([]byte(resultText(res)), &found)
	return len(found.Matches) > 0 && found.Matches[0].Name == tool
}

// TestSearchLearnsFromLog: a query that led to successful calls of a tool (in the log,
// which replicas share) finds that tool, though no word of it is in the tool's
// definition; with learning off, it does not.
func TestSearchLearnsFromLog(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	for range 3 {
		log.Call(searchlog.Call{Time: time.Now(), Source: "gateway", Tool: "alpha__add", Server: "alpha", Outcome: searchlog.OutcomeOK, Rank: 2, Query: "zorblax frobnicate"})
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}
	off := startGateway(t, cfg, gateway.Options{Mode: policy.On, SearchLog: log, NoLearning: true}).client("", nil)
	on := startGateway(t, cfg, gateway.Options{Mode: policy.On, SearchLog: log}).client("", nil)

	// The learned index is built off the request path: the first searches may not
	// have it yet.
	learned := false
	for i := 0; i < 300 && !learned; i++ {
		if learned = searchFinds(t, on, "zorblax frobnicate", "alpha__add"); !learned {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !learned {
		t.Fatal("30s on, the query the log links to alpha__add does not find it")
	}
	if searchFinds(t, off, "zorblax frobnicate", "alpha__add") {
		t.Error("with learning off, the learned query finds alpha__add")
	}
	// What the tool's own words find is unchanged.
	if !searchFinds(t, on, "add two numbers", "alpha__add") {
		t.Error("the tool's own words no longer find it first")
	}
}

// TestSearchLogSeveralQueries: a tool_search of several queries is recorded as one
// search a query, each with its own results, and a call links to the query whose
// results held the tool; a select: query is not a search and is not recorded.
func TestSearchLogSeveralQueries(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, SearchLog: log})
	cs := h.client("", nil)
	call(t, cs, "tool_search", map[string]any{"query": "echo some text back", "queries": []string{"add two numbers"}, "limit": 2})
	call(t, cs, "tool_search", map[string]any{"query": "select:alpha__add"})
	call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 1, "b": 2}})
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(searches) != 2 || searches[0].Query != "echo some text back" || searches[1].Query != "add two numbers" {
		t.Fatalf("searches %+v", searches)
	}
	if len(searches[1].Results) == 0 || searches[1].Results[0].Tool != "alpha__add" || searches[0].Session != searches[1].Session {
		t.Errorf("the second query's record %+v", searches[1])
	}
	if len(calls) != 1 || calls[0].Query != "add two numbers" || calls[0].Rank != 1 {
		t.Errorf("calls %+v; want the call linked to the query that found it", calls)
	}
}
