package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
