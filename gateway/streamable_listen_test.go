package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// listenBody is a 2026-07-28 client's subscriptions/listen for tools and prompts list
// changes.
func listenBody(id int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},` + envelope + `}}`
}

// httpListen is an open subscriptions/listen POST, as a raw client holds it.
type httpListen struct {
	events <-chan string
	seen   []string // the events read so far, the acknowledgement first
	close  func()
}

// openListen sends a listen (request id) to url with token ("": none), and returns it
// once acknowledged; a listen refused is returned as the reply it got instead.
func openListen(t *testing.T, url, token string, id int) (*httpListen, httpReply) {
	t.Helper()
	headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	return postListen(t, url, headers, listenBody(id))
}

// postListen is openListen for any headers and body.
func postListen(t *testing.T, url string, headers map[string]string, body string) (*httpListen, httpReply) {
	t.Helper()
	headers["Content-Type"] = "application/json"
	headers["Accept"] = "application/json, text/event-stream"
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	resp, err := client.Do(testupstream.Request(t, http.MethodPost, url, headers, strings.NewReader(body)).WithContext(ctx))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &httpListen{close: func() {
		cancel()
		resp.Body.Close()
		client.CloseIdleConnections()
	}}
	t.Cleanup(l.close)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body := bodyWithin(t, "a listen's answer", resp)
		l.close()
		return nil, httpReply{status: resp.StatusCode, header: resp.Header, body: body}
	}
	l.events = sseEvents(resp.Body)
	l.next(t, "notifications/subscriptions/acknowledged")
	return l, httpReply{status: resp.StatusCode, header: resp.Header}
}

// next reads l's events until one that contains want, failing the test when none comes
// within 30 s.
func (l *httpListen) next(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-l.events:
			if !ok {
				t.Fatalf("the listen ended before %s; it got %q", want, l.seen)
			}
			l.seen = append(l.seen, ev)
			if strings.Contains(ev, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s on the listen within 30s; it got %q", want, l.seen)
		}
	}
}

// stdioLines reads s's lines as they come (a stdio client that does not read holds up
// the SDK's notifications to every other listen of its profile), and returns a
// function that returns the next line match accepts, failing the test when none comes
// within 30 s.
func stdioLines(t *testing.T, s *lineSession) func(what string, match func(string) bool) string {
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		for {
			line, err := s.out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	return func(what string, match func(string) bool) string {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the stdio connection ended before %s", what)
				}
				if match(line) {
					return line
				}
			case <-timeout:
				t.Fatalf("no %s on stdio within 30s", what)
			}
		}
	}
}

// containing matches a line that contains want.
func containing(want string) func(string) bool {
	return func(line string) bool { return strings.Contains(line, want) }
}

// count is how many of events contain s.
func count(events []string, s string) int {
	n := 0
	for _, ev := range events {
		if strings.Contains(ev, s) {
			n++
		}
	}
	return n
}

// modernCall sends a 2026-07-28 tools/call of tool with args (JSON) to url with token,
// and fails the test unless it completes.
func modernCall(t *testing.T, url, token, tool, args string) {
	t.Helper()
	headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	r := post(t, url, headers, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`,`+envelope+`}}`))
	if r.status != http.StatusOK || !strings.Contains(r.body, `"resultType":"complete"`) || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("%s: %d %s", tool, r.status, r.body)
	}
}

// listenRefusal is the answer to listen id past a cap: the TypeScript SDK v2 server's
// (-32603 "Subscription limit reached", HTTP 200), and which cap.
func listenRefusal(id int, why string) string {
	return rpcError(strconv.Itoa(id), -32603, "Subscription limit reached: "+why)
}

// Listens over HTTP are capped per token and in total: past a cap, a listen is
// refused at once, before any acknowledgement, with the TypeScript SDK's error and the
// cap it is over; another token's listens are not counted against the first's, and a
// listen whose client closed it frees its slot. Before the caps, every listen was
// acknowledged and held its connection for good.
func TestHTTPListenCaps(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"a": {Token: "tok-a"}, "b": {Token: "tok-b"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{MaxListens: 3, MaxListensPerToken: 2}) + "/mcp"

	a1, _ := openListen(t, url, "tok-a", 1)
	a2, _ := openListen(t, url, "tok-a", 2)
	if a1 == nil || a2 == nil {
		t.Fatal("the first two listens of a token were refused")
	}
	perToken := "this token has 2 subscriptions/listen streams open, the most toolshed allows per token (--max-listens-per-token, HTTPOptions.MaxListensPerToken); close listens no longer in use (one per client is enough), or raise the limit"
	if l, r := openListen(t, url, "tok-a", 3); l != nil || r.status != http.StatusOK || r.body != listenRefusal(3, perToken) {
		t.Errorf("a third listen of one token: %d %s\nwant 200 %s", r.status, r.body, listenRefusal(3, perToken))
	}
	if b1, r := openListen(t, url, "tok-b", 4); b1 == nil {
		t.Fatalf("another token's first listen was refused: %d %s", r.status, r.body)
	}
	total := "toolshed has 3 subscriptions/listen streams open, the most it allows (--max-listens, HTTPOptions.MaxListens); close listens no longer in use (a listen ends when its client closes its POST), or raise the limit"
	if l, r := openListen(t, url, "tok-b", 5); l != nil || r.status != http.StatusOK || r.body != listenRefusal(5, total) {
		t.Errorf("a fourth listen in all: %d %s\nwant 200 %s", r.status, r.body, listenRefusal(5, total))
	}
	// The refusals took nothing: the listens open still carry list changes, and
	// calls are served.
	modernCall(t, url, "tok-a", "alpha__grow", `{"n":1}`)
	a2.next(t, "notifications/tools/list_changed")

	// A listen its client closed frees its slot once the front sees it gone.
	a1.close()
	deadline := time.Now().Add(30 * time.Second)
	for id := 6; ; id++ {
		l, r := openListen(t, url, "tok-a", id)
		if l != nil {
			break
		}
		if r.body != listenRefusal(id, total) && r.body != listenRefusal(id, perToken) {
			t.Fatalf("a listen after one was closed: %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed listen's slot was not free again within 30s")
		}
		time.Sleep(20 * time.Millisecond) // the front notices the closed connection
	}
	if l, r := openListen(t, url, "tok-a", 100); l != nil || r.body != listenRefusal(100, total) {
		t.Errorf("a listen once the slot is taken again: %d %s, want the refusal for the total", r.status, r.body)
	}
}

// A listen on the POST of an older client's session holds its connection too, and
// counts against the same caps.
func TestHTTPSessionListenCounted(t *testing.T) {
	t.Parallel()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{MaxListensPerToken: 1}) + "/mcp"
	id, r := openSession(t, url, "")
	if id == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	headers := map[string]string{"Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}
	l, r := postListen(t, url, headers, `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	if l == nil {
		t.Fatalf("a session's listen: %d %s", r.status, r.body)
	}
	why := "clients have 1 subscriptions/listen streams open, the most toolshed allows per token (--max-listens-per-token, HTTPOptions.MaxListensPerToken); close listens no longer in use (one per client is enough), or raise the limit"
	if l, r := openListen(t, url, "", 3); l != nil || r.body != listenRefusal(3, why) {
		t.Errorf("a modern listen beside it: %d %s\nwant %s", r.status, r.body, listenRefusal(3, why))
	}
}

// Over stdio, a connection holds at most gateway.MaxStdioListens listens: the next is
// refused with the TypeScript SDK's error, and a listen the client cancelled frees its
// place.
func TestStdioListenCap(t *testing.T) {
	t.Parallel()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	s := newRawLineSession(t, h)
	next := stdioLines(t, s)
	acked := func(id int) bool {
		ack := fmt.Sprintf(`"io.modelcontextprotocol/subscriptionId":%d}`, id)
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id)
		line := next(fmt.Sprintf("the answer to listen %d", id), func(line string) bool {
			return strings.Contains(line, "notifications/subscriptions/acknowledged") && strings.Contains(line, ack) || strings.HasPrefix(line, answer)
		})
		if !strings.HasPrefix(line, answer) {
			return true
		}
		if want := listenRefusal(id, fmt.Sprintf("this connection has %d subscriptions/listen streams open, the most toolshed allows on one (MaxStdioListens); cancel listens no longer in use (notifications/cancelled), one is enough", gateway.MaxStdioListens)); strings.TrimSpace(line) != want {
			t.Fatalf("listen %d: %s\nwant %s", id, line, want)
		}
		return false
	}
	for id := 1; id <= gateway.MaxStdioListens; id++ {
		s.send(t, listenBody(id))
		if !acked(id) {
			t.Fatalf("listen %d of %d was refused", id, gateway.MaxStdioListens)
		}
	}
	over := gateway.MaxStdioListens + 1
	s.send(t, listenBody(over))
	if acked(over) {
		t.Fatalf("listen %d was acknowledged, past the cap", over)
	}
	// The connection goes on serving.
	s.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+env26(`{}`)+`}}`)
	if got := next("the answer to tools/list", containing(`"id":"list"`)); !strings.Contains(got, `"name":"alpha__echo"`) {
		t.Errorf("tools/list after the refusal: %s", got)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	deadline := time.Now().Add(30 * time.Second)
	for id := over + 1; ; id++ {
		s.send(t, listenBody(id))
		if acked(id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a cancelled listen's place was not free again within 30s")
		}
	}
}

// A listen carries only what its caller's profile may see: a change to a server
// outside a token's profile reaches the listens of the profile that has it, and not
// that token's.
func TestListenScopedToProfile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic"), testServer("shared", "features")},
		Profiles: map[string]config.Profile{
			"a": {Token: "tok-a", Scope: policy.Scope{Servers: []string{"alpha", "shared"}}},
			"b": {Token: "tok-b", Scope: policy.Scope{Servers: []string{"beta", "shared"}}},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	a, _ := openListen(t, url, "tok-a", 1)
	b, _ := openListen(t, url, "tok-b", 1)
	if a == nil || b == nil {
		t.Fatal("a listen was refused")
	}
	// alpha's tools change, and a hears of it; then beta's, and b does.
	modernCall(t, url, "tok-a", "alpha__grow", `{"n":1}`)
	a.next(t, "notifications/tools/list_changed")
	modernCall(t, url, "tok-b", "beta__grow", `{"n":1}`)
	b.next(t, "notifications/tools/list_changed")
	// Then the prompts of the server both profiles have: each listen hears of it
	// after everything before, another profile's change included had it heard of one.
	modernCall(t, url, "tok-a", "shared__add_prompt", `{"name":"late"}`)
	for who, l := range map[string]*httpListen{"a (alpha)": a, "b (beta)": b} {
		l.next(t, "notifications/prompts/list_changed")
		if n := count(l.seen, "notifications/tools/list_changed"); n != 1 {
			t.Errorf("profile %s's listen got %d tools/list_changed, want one, its own server's: %q", who, n, l.seen)
		}
	}
}

// Tool search turning on by itself (auto, when an upstream's new tools take the
// deferrable tools past the threshold) changes the list, and the listens hear of it,
// over HTTP and over stdio; the list then has tool_search.
func TestListenHearsToolSearchTurnOn(t *testing.T) {
	t.Parallel()
	ts := policy.Config{Enabled: policy.Auto, ThresholdPct: 100, SearchDefaultLimit: policy.DefaultSearchDefaultLimit, MaxSearchLimit: policy.DefaultMaxSearchLimit}
	servers := []config.Server{testServer("alpha", "basic")}
	// A context window just above what alpha's tools cost, measured on a gateway of
	// its own: one more tool turns search on.
	first := startGateway(t, &config.Config{Servers: servers, ToolSearch: ts}, gateway.Options{})
	plan := policy.Decide(first.g.Catalog(), policy.Input{Config: ts, ContextWindow: 1 << 30})
	window := plan.DeferrableTokens + 1
	if p := policy.Decide(first.g.Catalog(), policy.Input{Config: ts, ContextWindow: window}); p.Active || p.DeferrableTokens == 0 {
		t.Fatalf("with a window of %d tokens: %s", window, p.Reason)
	}
	first.stopped(10 * time.Second)

	h := startGateway(t, &config.Config{Servers: servers, ToolSearch: ts}, gateway.Options{ContextWindow: window})
	url := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	web, _ := openListen(t, url, "", 1)
	if web == nil {
		t.Fatal("the listen was refused")
	}
	s := newRawLineSession(t, h)
	next := stdioLines(t, s)
	s.send(t, listenBody(1))
	next("the acknowledgement", containing("notifications/subscriptions/acknowledged"))
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+env26(`{}`)+`}}`)
	if got := next("the answer to tools/list", containing(`"id":2,"result"`)); strings.Contains(got, `"tool_search"`) || !strings.Contains(got, `"alpha__grow"`) {
		t.Fatalf("tool search is on before the change: %s", got)
	}

	modernCall(t, url, "", "alpha__grow", `{"n":1}`)
	web.next(t, "notifications/tools/list_changed")
	next("tools/list_changed", containing("notifications/tools/list_changed"))
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+env26(`{}`)+`}}`)
	if got := next("the answer to tools/list", containing(`"id":3,"result"`)); !strings.Contains(got, `"tool_search"`) {
		t.Errorf("tool search is not on after the change: %s", got)
	}
}
