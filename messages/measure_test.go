package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/messages"
)

// requestBody is a first-turn request over the tools of snap: every tool deferred
// behind a BM25 search tool when deferred, else every tool sent as is.
func requestBody(snap *catalog.Snapshot, deferred bool) []byte {
	var tools []json.RawMessage
	if deferred {
		tools = append(tools, json.RawMessage(`{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`))
	}
	for _, t := range snap.Tools() {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		b, _ := json.Marshal(map[string]any{"name": t.Qualified, "description": t.Description, "input_schema": schema, "defer_loading": deferred})
		tools = append(tools, b)
	}
	b, _ := json.Marshal(map[string]any{
		"model": "fake-model", "max_tokens": 1024, "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "Create a GitHub issue for the login bug and post a link in the team channel."}},
	})
	return b
}

func catalogs(t testing.TB) map[string]*catalog.Snapshot {
	t.Helper()
	out := map[string]*catalog.Snapshot{}
	snap, problems := builtin.Snapshot()
	if len(problems) > 0 {
		t.Fatal(problems[0])
	}
	out["builtin"] = snap
	for _, set := range []string{"livemcpbench", "bfcl"} {
		sources, problems := catalog.ReadFile(filepath.Join("..", "bench", set, "catalog.json"))
		if len(problems) > 0 {
			t.Fatal(problems[0])
		}
		snap, problems := catalog.Build(sources)
		if len(problems) > 0 {
			t.Fatal(problems[0])
		}
		out[set] = snap
	}
	return out
}

// TestFirstTurnTokens measures the tokens the upstream model receives on the first turn
// for the real catalogs, with every tool deferred behind tool search and without
// deferral, and checks the saving is at least 90%. docs/proxy.md states these figures in
// a sentence made here, so that they cannot drift from the measurement: the test checks
// that the page has it, and prints it to paste when it has not. Run with -v for the
// figures.
func TestFirstTurnTokens(t *testing.T) {
	all := catalogs(t)
	var figs []firstTurn
	for _, name := range []string{"builtin", "livemcpbench", "bfcl"} {
		snap := all[name]
		model := fakellm.NewAnthropic(fakellm.Say("ok"))
		up := httptest.NewServer(model)
		defer up.Close()
		p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: up.URL}}
		rec := httptest.NewRecorder()
		p.Handler().ServeHTTP(rec, postJSON("/v1/messages", requestBody(snap, true)))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
		f := firstTurn{name: name, tools: snap.Len(), with: fakellm.InputTokens(model.Requests()[0].Body), without: fakellm.InputTokens(requestBody(snap, false))}
		t.Logf("%-13s %4d tools: first turn %7d tokens without deferral, %5d with tool search (%.1f%% fewer)", name, f.tools, f.without, f.with, f.saved())
		if f.saved() < 90 {
			t.Errorf("%s: tool search saves %.1f%% of the first turn's tokens, want at least 90%%", name, f.saved())
		}
		figs = append(figs, f)
	}
	sentence := firstTurnSentence(figs)
	page, err := os.ReadFile(filepath.Join("..", "docs", "proxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(page)), " "), sentence) {
		t.Errorf("docs/proxy.md does not state the figures measured here; it should say:\n\n%s", wrapText(sentence, 96))
	}
}

// firstTurn is the first turn's tokens for one catalog, with and without deferral.
type firstTurn struct {
	name                 string
	tools, with, without int
}

func (f firstTurn) saved() float64 { return 100 * float64(f.without-f.with) / float64(f.without) }

// firstTurnSentence is docs/proxy.md's sentence for the figures of the built-in,
// LiveMCPBench and BFCL catalogs, in that order.
func firstTurnSentence(figs []firstTurn) string {
	with := make([]int, len(figs))
	saved := make([]string, len(figs))
	for i, f := range figs {
		with[i], saved[i] = f.with, fmt.Sprintf("%.1f", f.saved())
	}
	span := func(lo, hi string) string {
		if lo == hi {
			return lo
		}
		return lo + "–" + hi
	}
	slices.Sort(saved)
	return fmt.Sprintf("Measured (`go test ./messages -run TestFirstTurnTokens -v`): on its first turn the upstream "+
		"model receives %s tokens instead of %s for the built-in catalog (%s tools), %s for LiveMCPBench's (%s) and "+
		"%s for BFCL's (%s): %s%% fewer.",
		span(thousands(slices.Min(with)), thousands(slices.Max(with))),
		thousands(figs[0].without), thousands(figs[0].tools), thousands(figs[1].without), thousands(figs[1].tools),
		thousands(figs[2].without), thousands(figs[2].tools), span(saved[0], saved[len(saved)-1]))
}

// thousands writes n with commas between thousands: 131,694.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// wrapText breaks s into lines of at most width characters, between words.
func wrapText(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len([]rune(w)) > width {
			b.WriteString("\n")
			n = 0
		} else if n > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	return b.String()
}

// instant is an upstream that answers at once, so that a benchmark measures the
// proxy's own work. It encodes each request as the Anthropic upstream does, and replies from a script that repeats.
type instant struct {
	replies []*messages.Response
	n       int
}

func (u *instant) Create(_ context.Context, req *messages.Request, _ http.Header) (*messages.Response, error) {
	if _, err := req.MarshalJSON(); err != nil {
		return nil, err
	}
	r := *u.replies[u.n%len(u.replies)]
	u.n++
	return &r, nil
}

func (u *instant) Stream(context.Context, *messages.Request, http.Header) (messages.EventStream, error) {
	return nil, fmt.Errorf("not streamed")
}

func (u *instant) CountTokens(context.Context, *messages.Request, http.Header) (int, error) {
	return 0, nil
}

func reply(stop string, blocks ...json.RawMessage) *messages.Response {
	var r messages.Response
	content, _ := json.Marshal(blocks)
	b := fmt.Appendf(nil, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, content, stop)
	if err := json.Unmarshal(b, &r); err != nil {
		panic(err)
	}
	return &r
}

// BenchmarkProxyAddedLatency measures what the proxy adds to a request with 1,000
// deferred real tools, the upstream's own time excluded: reading and validating the
// client's request, rendering and encoding the upstream's, searching, and writing the
// response. "answer" makes one upstream call; "search-then-call" makes two with a
// search between them. Reports p50 and p99 per request.
//
//	go test ./messages -run XXX -bench AddedLatency -benchtime 2000x
func BenchmarkProxyAddedLatency(b *testing.B) {
	real, err := scale.Real(filepath.Join("..", "bench"))
	if err != nil {
		b.Fatal(err)
	}
	snap, problems := catalog.Build(scale.Catalog(real, 1000))
	if len(problems) > 0 {
		b.Fatal(problems[0])
	}
	body := requestBody(snap, true)
	for _, c := range []struct {
		name    string
		replies []*messages.Response
	}{
		{"answer", []*messages.Response{reply("end_turn", fakellm.Text("Done."))}},
		{"search-then-call", []*messages.Response{
			reply("tool_use", fakellm.ToolUse("toolu_1", "tool_search_tool_bm25", `{"query":"create github issue"}`)),
			reply("tool_use", fakellm.ToolUse("toolu_2", snap.Tools()[0].Qualified, `{}`)),
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := (&messages.Proxy{Upstream: &instant{replies: c.replies}}).Handler()
			serve := func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, postJSON("/v1/messages", body))
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
			start := time.Now()
			serve() // the first request indexes the tools
			first := time.Since(start)
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				serve()
				times = append(times, time.Since(t0))
			}
			b.ReportMetric(float64(first.Microseconds()), "first-µs")
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// postJSON is a request as a client sends it: a JSON body.
func postJSON(path string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}
