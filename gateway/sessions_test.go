package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// sessionRequest sends a request of a Streamable HTTP client to url: POST (with body),
// GET (the session's stream) or DELETE, naming session id, with a bearer token if token
// is set.
func sessionRequest(t *testing.T, method, url, token, id, body string) httpReply {
	t.Helper()
	// A GET opens a stream that stays open: a short deadline ends it once its status is
	// known (only the status of a refused one matters here).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && method == http.MethodGet {
		return httpReply{status: resp.StatusCode, header: resp.Header} // an open stream
	}
	b, _ := io.ReadAll(resp.Body)
	return httpReply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// growCall is a tools/call of alpha__grow, which adds the tool extra_N to alpha: a call
// that leaves a trace upstream.
func growCall(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__grow","arguments":{"n":%d}}}`, n)
}

// A session id is usable only with the credential and profile that created it: another
// token or another profile gets the answer for an unknown session, on POST, GET and
// DELETE, and nothing runs.
func TestHTTPSessionBoundToCredential(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{
			"a":    {Token: "tok-a"},
			"b":    {Token: "tok-b"},
			"open": {},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{Token: "main"})
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	a := httpClient(t, url+"/mcp/a", bearer("tok-a"), nil, "")
	b := httpClient(t, url+"/mcp/b", bearer("tok-b"), nil, "")
	m := httpClient(t, url+"/mcp/open", bearer("main"), nil, "") // the gateway token, as profile open
	if b.ID() == "" || m.ID() == "" {
		t.Fatal("the sessions have no id")
	}
	// The answer for an id that no one was given, for each method.
	unknown := map[string]httpReply{}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		unknown[method] = sessionRequest(t, method, url+"/mcp/a", "tok-a", "NOSUCHSESSIONID234567ABCD", growCall(900))
		if unknown[method].status != http.StatusNotFound {
			t.Fatalf("%s with an unknown session = %d %q, want 404", method, unknown[method].status, unknown[method].body)
		}
	}
	n := 900
	for _, tc := range []struct {
		name, path, token, id string
	}{
		{"another token at its own profile", "/mcp/a", "tok-a", b.ID()},
		{"another token selecting its profile", "/mcp", "tok-a", b.ID()},
		{"the gateway token at the session's profile", "/mcp/b", "main", b.ID()},
		{"the same token at another profile", "/mcp", "main", m.ID()},
		{"the same token at another named profile", "/mcp/a", "main", m.ID()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				n++
				r := sessionRequest(t, method, url+tc.path, tc.token, tc.id, growCall(n))
				want := unknown[method]
				if r.status != want.status || r.body != want.body || r.header.Get("Content-Type") != want.header.Get("Content-Type") {
					t.Errorf("%s %s with another's session = %d %q, want what an unknown session gets: %d %q", method, tc.path, r.status, r.body, want.status, want.body)
				}
			}
		})
	}
	// The owners' sessions still work, and none of the replayed calls ran: alpha has the
	// tool the owner's call adds, and none of the others.
	for name, cs := range map[string]*mcp.ClientSession{"b": b, "m": m} {
		if res := call(t, cs, "alpha__echo", map[string]any{"text": "still " + name}); resultText(res) != "still "+name {
			t.Errorf("%s's own session after the replays: %+v", name, res)
		}
	}
	if res := call(t, b, "alpha__grow", map[string]any{"n": 999}); resultText(res) != "added extra_999" {
		t.Fatalf("grow = %+v", res)
	}
	waitFor(t, "alpha__extra_999 in the list", func() bool { return has(toolNames(t, b), "alpha__extra_999") })
	for _, name := range toolNames(t, b) {
		if strings.HasPrefix(name, "alpha__extra_") && name != "alpha__extra_999" {
			t.Errorf("a replayed call ran upstream: alpha lists %s", name)
		}
	}
	if res := call(t, a, "alpha__echo", map[string]any{"text": "a"}); resultText(res) != "a" {
		t.Errorf("a's session: %+v", res)
	}
}

// Without tokens, every client is the same credential: a session is still bound to its
// profile. When the gateway stops, its sessions are forgotten.
func TestHTTPSessionBoundToProfile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"p1": {}, "p2": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	p1 := httpClient(t, url+"/mcp/p1", nil, nil, "")
	for _, path := range []string{"/mcp/p2", "/mcp"} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			if r := sessionRequest(t, method, url+path, "", p1.ID(), growCall(1)); r.status != http.StatusNotFound {
				t.Errorf("%s %s with p1's session = %d %q, want 404", method, path, r.status, r.body)
			}
		}
	}
	if r := sessionRequest(t, http.MethodPost, url+"/mcp/p1", "", p1.ID(), growCall(2)); r.status != http.StatusOK || !strings.Contains(r.body, "added extra_2") {
		t.Errorf("p1's session at p1 = %d %q", r.status, r.body)
	}
	if !h.stopped(10 * time.Second) {
		t.Fatal("the gateway did not stop")
	}
	if r := sessionRequest(t, http.MethodPost, url+"/mcp/p1", "", p1.ID(), growCall(3)); r.status != http.StatusNotFound {
		t.Errorf("p1's session once the gateway stopped = %d %q, want 404", r.status, r.body)
	}
}

// The activity log names each session by a keyed hash: never its id (a capability),
// the same hash for every call of a session, another one for another session.
func TestActivityLogHashesSessions(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(t.TempDir(), "activity.jsonl")
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"a": {}, "b": {}},
		Hooks:    config.Hooks{ActivityLog: logFile}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	a := httpClient(t, url+"/mcp/a", nil, nil, "")
	b := httpClient(t, url+"/mcp/b", nil, nil, "")
	for i := range 3 {
		for _, cs := range []*mcp.ClientSession{a, b} {
			call(t, cs, "alpha__echo", map[string]any{"text": fmt.Sprint(i)})
		}
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID(), b.ID()} {
		if id == "" || strings.Contains(string(data), id) {
			t.Errorf("the activity log holds the session id %q:\n%s", id, data)
		}
	}
	tags := map[string]map[string]int{} // profile -> session tag -> calls
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ Session, Profile string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("activity line %q: %v", line, err)
		}
		if tags[e.Profile] == nil {
			tags[e.Profile] = map[string]int{}
		}
		tags[e.Profile][e.Session]++
		if len(e.Session) != 12 || strings.Trim(e.Session, "0123456789abcdef") != "" {
			t.Errorf("activity line %q: the session is not a 12-digit hash", line)
		}
	}
	if len(tags["a"]) != 1 || len(tags["b"]) != 1 {
		t.Fatalf("sessions in the activity log by profile: %v, want one hash per session for its 3 calls:\n%s", tags, data)
	}
	for tag := range tags["a"] {
		if tags["b"][tag] > 0 {
			t.Errorf("two sessions have the same hash %s:\n%s", tag, data)
		}
	}
}

// openSession initializes a session as a plain HTTP client at url and returns its id, or
// the reply when it was refused.
func openSession(t *testing.T, url, token string) (string, httpReply) {
	t.Helper()
	r := sessionRequest(t, http.MethodPost, url, token, "", initializeBody)
	if r.status != http.StatusOK {
		return "", r
	}
	id := r.header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize gave no session id: %q", r.body)
	}
	return id, r
}

// refusedForCap checks that r is the 503 of a session cap, naming flag.
func refusedForCap(t *testing.T, what string, r httpReply, flag string) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || !strings.Contains(r.body, flag+",") || !strings.Contains(r.body, "DELETE") {
		t.Errorf("%s = %d (Retry-After %q) %q, want 503 with Retry-After naming %s", what, r.status, r.header.Get("Retry-After"), r.body, flag)
	}
}

// Sessions are capped per token and in total; past a cap, a new session is refused with
// 503 and Retry-After, saying which cap; a slot freed by DELETE or by the idle timeout
// is taken again.
func TestHTTPSessionCaps(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"a": {Token: "tok-a"}, "b": {Token: "tok-b"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})

	t.Run("per token and total", func(t *testing.T) {
		url := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 3, MaxSessionsPerToken: 2}) + "/mcp"
		a1, _ := openSession(t, url, "tok-a")
		a2, _ := openSession(t, url, "tok-a")
		if a1 == "" || a2 == "" {
			t.Fatal("the first two sessions of a token were refused")
		}
		_, r := openSession(t, url, "tok-a")
		refusedForCap(t, "a third session of one token", r, "--max-sessions-per-token")
		if !strings.Contains(r.body, "this token has 2 sessions open") {
			t.Errorf("the refusal does not say how many sessions the token has: %q", r.body)
		}
		// A real client is refused too, and says so.
		if _, closeFn, err := dialHTTP(url, map[string]string{"Authorization": "Bearer tok-a"}, nil, ""); err == nil {
			closeFn()
			t.Error("a go-sdk client connected past the cap")
		}
		b1, _ := openSession(t, url, "tok-b")
		if b1 == "" {
			t.Fatal("another token's first session was refused")
		}
		_, r = openSession(t, url, "tok-b")
		refusedForCap(t, "a fourth session in all", r, "--max-sessions")
		// The refused requests left nothing behind: the sessions work, and a session
		// ended with DELETE frees its slot at once.
		if r := sessionRequest(t, http.MethodPost, url, "tok-a", a1, growCall(1)); r.status != http.StatusOK {
			t.Errorf("a's first session = %d %q", r.status, r.body)
		}
		if r := sessionRequest(t, http.MethodDelete, url, "tok-a", a2, ""); r.status != http.StatusNoContent {
			t.Fatalf("DELETE = %d %q", r.status, r.body)
		}
		if id, r := openSession(t, url, "tok-a"); id == "" {
			t.Errorf("a session after DELETE freed a slot = %d %q", r.status, r.body)
		}
		_, r = openSession(t, url, "tok-a")
		refusedForCap(t, "a session once the slot is taken again", r, "--max-sessions")
	})

	t.Run("a half-sent body holds no slot", func(t *testing.T) {
		url := serveHTTP(t, h, gateway.HTTPOptions{MaxSessionsPerToken: 1}) + "/mcp"
		c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-a\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"")
		time.Sleep(200 * time.Millisecond) // the stalled request is being served
		if id, r := openSession(t, url, "tok-a"); id == "" {
			t.Errorf("a session while another initialize's body is stalled = %d %q", r.status, r.body)
		}
	})

	t.Run("idle timeout frees a slot", func(t *testing.T) {
		url := serveHTTP(t, h, gateway.HTTPOptions{MaxSessionsPerToken: 1, IdleTimeout: time.Second}) + "/mcp"
		if id, r := openSession(t, url, "tok-a"); id == "" {
			t.Fatalf("the first session = %d %q", r.status, r.body)
		}
		_, r := openSession(t, url, "tok-a")
		refusedForCap(t, "a second session", r, "--max-sessions-per-token")
		waitFor(t, "the idle session to free its slot", func() bool {
			id, _ := openSession(t, url, "tok-a")
			return id != ""
		})
	})

	t.Run("defaults", func(t *testing.T) {
		url := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
		for i := range gateway.DefaultMaxSessionsPerToken {
			if id, r := openSession(t, url, "tok-a"); id == "" {
				t.Fatalf("session %d of a token, under the default cap = %d %q", i+1, r.status, r.body)
			}
		}
		_, r := openSession(t, url, "tok-a")
		refusedForCap(t, "a session past the default cap", r, "--max-sessions-per-token")
		if id, r := openSession(t, url, "tok-b"); id == "" {
			t.Errorf("another token's session = %d %q", r.status, r.body)
		}
	})

	t.Run("no cap", func(t *testing.T) {
		url := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: -1, MaxSessionsPerToken: -1}) + "/mcp"
		for i := range gateway.DefaultMaxSessionsPerToken + 10 {
			if id, r := openSession(t, url, "tok-b"); id == "" {
				t.Fatalf("session %d without caps = %d %q", i+1, r.status, r.body)
			}
		}
	})
}
