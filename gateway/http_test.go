package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// serveHTTP serves the gateway's Streamable HTTP front until the test ends and returns
// its base URL.
func serveHTTP(t *testing.T, h *harness, opts gateway.HTTPOptions) string {
	t.Helper()
	srv := httptest.NewServer(h.g.Handler(opts))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// headerTransport adds headers to every request a client sends.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// dialHTTP connects a go-sdk client of protocol version (see sessionOptions) to
// endpoint over Streamable HTTP, sending headers with every request.
func dialHTTP(endpoint string, headers map[string]string, opts *mcp.ClientOptions, version string) (*mcp.ClientSession, func(), error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	client := &http.Client{Transport: headerTransport{headers: headers, base: base}}
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-http-client", Version: "1"}, opts).Connect(context.Background(), t, sessionOptions(version))
	if err != nil {
		base.CloseIdleConnections()
		return nil, nil, err
	}
	return cs, func() {
		cs.Close()
		base.CloseIdleConnections()
	}, nil
}

// httpClient is dialHTTP for a client that must connect; it is closed when the test ends.
func httpClient(t *testing.T, endpoint string, headers map[string]string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	cs, closeFn, err := dialHTTP(endpoint, headers, opts, version)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(closeFn)
	if version != "" && version != sdkDefault && cs.InitializeResult().ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, version)
	}
	return cs
}

// httpProtocols are the MCP versions HTTP clients of the tests speak: the gateway's
// Streamable HTTP front is stateful, where the go-sdk serves the versions before
// 2026-07-28 only (clients asking for it fall back to 2025-11-25).
var httpProtocols = []string{"2025-11-25", "2025-03-26"}

// initializeBody is a client's first request, as a plain HTTP client would send it.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"plain","version":"1"}}}`

// httpReply is what a plain HTTP request got.
type httpReply struct {
	status int
	header http.Header
	body   string
	closed bool // the server closes the connection after it (Connection: close)
}

// post sends body to url as a Streamable HTTP client would, with extra headers ("Host"
// sets the request's host).
func post(t *testing.T, url string, headers map[string]string, body io.Reader) httpReply {
	t.Helper()
	all := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	for k, v := range headers {
		all[k] = v
	}
	return do(t, testupstream.Request(t, http.MethodPost, url, all, body))
}

func do(t *testing.T, req *http.Request) httpReply {
	t.Helper()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return httpReply{status: resp.StatusCode, header: resp.Header, body: string(b), closed: resp.Close}
}

// initialized reports whether a reply is a successful initialize result.
func initialized(r httpReply) bool {
	return r.status == http.StatusOK && strings.Contains(r.body, `"serverInfo"`) && strings.Contains(r.body, `"toolshed"`)
}

func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// TestHTTP serves one gateway over Streamable HTTP, each subtest with its own options.
func TestHTTP(t *testing.T) {
	t.Parallel()
	bad, off := testServer("bad", "exit"), testServer("off", "basic")
	off.Disabled = true
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic"), bad, off},
		Profiles: map[string]config.Profile{
			"beta-only":  {Scope: policy.Scope{Servers: []string{"beta"}}},
			"alpha-echo": {Scope: policy.Scope{Tools: []string{"alpha__echo"}}},
		}}
	// bad fails once and is not restarted during the test.
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, BackoffMin: time.Hour, BackoffMax: time.Hour})
	t.Run("profiles", func(t *testing.T) { testHTTPProfiles(t, h) })
	t.Run("cross-origin", func(t *testing.T) { testHTTPCrossOrigin(t, h) })
	t.Run("body limit", func(t *testing.T) { testHTTPBodyLimit(t, h) })
	t.Run("concurrent sessions", func(t *testing.T) { testHTTPConcurrentSessions(t, h) })
	t.Run("tool list changed", func(t *testing.T) { testHTTPToolListChanged(t, h) }) // changes alpha's tools
}

func testHTTPProfiles(t *testing.T, h *harness) {
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	for _, tc := range []struct {
		path      string
		want      []string // tools that must be listed
		hidden    []string // tools that must not
		call      string
		onlyWants bool // the list is exactly want
	}{
		{path: "/mcp", want: []string{"alpha__echo", "alpha__add", "beta__echo", "beta__add"}, call: "alpha__echo"},
		{path: "/mcp/beta-only", want: []string{"beta__echo", "beta__add"}, hidden: []string{"alpha__echo", "alpha__add"}, call: "beta__echo"},
		{path: "/mcp/alpha-echo", want: []string{"alpha__echo"}, onlyWants: true, call: "alpha__echo"},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			cs := httpClient(t, url+tc.path, nil, nil, "")
			names := toolNames(t, cs)
			for _, w := range tc.want {
				if !has(names, w) {
					t.Errorf("%s lists %v, lacking %s", tc.path, names, w)
				}
			}
			for _, n := range tc.hidden {
				if has(names, n) {
					t.Errorf("%s lists %s, out of its scope: %v", tc.path, n, names)
				}
			}
			if tc.onlyWants && !slices.Equal(names, tc.want) {
				t.Errorf("%s lists %v, want exactly %v", tc.path, names, tc.want)
			}
			text := "via " + tc.path
			if res := call(t, cs, tc.call, map[string]any{"text": text}); res.IsError || resultText(res) != text {
				t.Errorf("%s: %s = %+v", tc.path, tc.call, res)
			}
			if tc.path != "/mcp" {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__add", Arguments: map[string]any{"a": 1, "b": 2}})
				if err == nil && !res.IsError {
					t.Errorf("%s: calling alpha__add, out of scope, = %+v", tc.path, res)
				}
			}
		})
	}
	t.Run("unknown profile", func(t *testing.T) {
		for _, path := range []string{"/mcp/nosuch", "/mcp/beta.only"} {
			r := post(t, url+path, nil, strings.NewReader(initializeBody))
			if r.status != http.StatusNotFound || !strings.Contains(r.body, "alpha-echo, beta-only") {
				t.Errorf("POST %s = %d %q, want 404 listing the profiles", path, r.status, r.body)
			}
			if _, closeFn, err := dialHTTP(url+path, nil, nil, ""); err == nil {
				closeFn()
				t.Errorf("a client connected to %s", path)
			}
		}
	})
}

func TestHTTPTokens(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Profiles: map[string]config.Profile{
			"alpha-only": {Scope: policy.Scope{Servers: []string{"alpha"}}, Token: "alpha-secret"},
			"beta-only":  {Scope: policy.Scope{Servers: []string{"beta"}}, Token: "beta-secret"},
			"open":       {Scope: policy.Scope{Servers: []string{"alpha"}}},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{Token: "main-secret"})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, auth string
			status           int
			challenge        string // in WWW-Authenticate, for 401s
		}{
			{"no token", "/mcp", "", http.StatusUnauthorized, `Bearer realm="toolshed"`},
			{"no token at a profile", "/mcp/beta-only", "", http.StatusUnauthorized, `Bearer realm="toolshed"`},
			{"empty bearer", "/mcp", "Bearer ", http.StatusUnauthorized, `Bearer realm="toolshed"`},
			{"not bearer", "/mcp", "Basic bWFpbi1zZWNyZXQ=", http.StatusUnauthorized, `Bearer realm="toolshed"`},
			{"wrong token", "/mcp", "Bearer wrong-secret", http.StatusUnauthorized, `error="invalid_token"`},
			{"token prefix", "/mcp", "Bearer main-secre", http.StatusUnauthorized, `error="invalid_token"`},
			{"another profile's token", "/mcp/alpha-only", "Bearer beta-secret", http.StatusForbidden, ""},
			{"a profile's token at a profile without one", "/mcp/open", "Bearer beta-secret", http.StatusForbidden, ""},
			// Which profiles exist is only told to an authorized client.
			{"no token at an unknown profile", "/mcp/nosuch", "", http.StatusUnauthorized, `Bearer realm="toolshed"`},
			{"wrong token at an unknown profile", "/mcp/nosuch", "Bearer wrong-secret", http.StatusUnauthorized, `error="invalid_token"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				headers := map[string]string{}
				if tc.auth != "" {
					headers["Authorization"] = tc.auth
				}
				r := post(t, url+tc.path, headers, strings.NewReader(initializeBody))
				if r.status != tc.status {
					t.Fatalf("POST %s with %q = %d %q, want %d", tc.path, tc.auth, r.status, r.body, tc.status)
				}
				if got := r.header.Get("WWW-Authenticate"); !strings.Contains(got, tc.challenge) || (tc.challenge == "") != (got == "") {
					t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
				}
				if strings.Contains(r.body, "secret") {
					t.Errorf("the refusal shows a token: %q", r.body)
				}
				if r.status == http.StatusUnauthorized && strings.Contains(r.body, "alpha-only") {
					t.Errorf("an unauthorized client is told the profiles: %q", r.body)
				}
				if r.status == http.StatusUnauthorized && !r.closed {
					t.Errorf("an unauthorized client keeps its connection: %v", r.header)
				}
				if _, closeFn, err := dialHTTP(url+tc.path, headers, nil, ""); err == nil {
					closeFn()
					t.Errorf("a client connected to %s with %q", tc.path, tc.auth)
				}
			})
		}
	})

	for _, tc := range []struct {
		name, path, token string
		see, hidden       string // a tool listed and one not
	}{
		{"gateway token", "/mcp", "main-secret", "alpha__echo", ""},
		{"gateway token at a profile", "/mcp/beta-only", "main-secret", "beta__echo", "alpha__echo"},
		{"gateway token at a profile without token", "/mcp/open", "main-secret", "alpha__echo", "beta__echo"},
		{"profile token selects its profile", "/mcp", "beta-secret", "beta__echo", "alpha__echo"},
		{"other profile token selects its profile", "/mcp", "alpha-secret", "alpha__echo", "beta__echo"},
		{"profile token at its profile", "/mcp/alpha-only", "alpha-secret", "alpha__echo", "beta__echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := httpClient(t, url+tc.path, map[string]string{"Authorization": "Bearer " + tc.token}, nil, "")
			names := toolNames(t, cs)
			if !has(names, tc.see) || tc.hidden != "" && has(names, tc.hidden) {
				t.Errorf("%s with %s lists %v, want %s and not %q", tc.path, tc.token, names, tc.see, tc.hidden)
			}
			if tc.hidden == "" && !has(names, "beta__echo") {
				t.Errorf("the gateway token at /mcp lists %v, want every server", names)
			}
			if res := call(t, cs, tc.see, map[string]any{"text": tc.name}); resultText(res) != tc.name {
				t.Errorf("%s = %+v", tc.see, res)
			}
		})
	}

	// Only profile tokens configured: a request still needs one of them.
	url2 := serveHTTP(t, h, gateway.HTTPOptions{})
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"", http.StatusUnauthorized}, {"Bearer main-secret", http.StatusUnauthorized}, {"Bearer beta-secret", http.StatusOK},
		// RFC 7235: the scheme is case-insensitive.
		{"bearer beta-secret", http.StatusOK}, {"BEARER beta-secret", http.StatusOK},
	} {
		headers := map[string]string{}
		if tc.auth != "" {
			headers["Authorization"] = tc.auth
		}
		r := post(t, url2+"/mcp", headers, strings.NewReader(initializeBody))
		if r.status != tc.status || tc.status == http.StatusOK && !initialized(r) || tc.status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("with profile tokens only, %q: %d %q, want %d", tc.auth, r.status, r.body, tc.status)
		}
	}
}

func testHTTPCrossOrigin(t *testing.T, h *harness) {
	url := serveHTTP(t, h, gateway.HTTPOptions{AllowOrigins: []string{"https://app.example"}})
	host := strings.TrimPrefix(url, "http://")
	port := host[strings.LastIndex(host, ":")+1:]
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		body    string // in the refusal
	}{
		{"no origin (not a browser)", nil, http.StatusOK, ""},
		{"same origin", map[string]string{"Origin": url, "Sec-Fetch-Site": "same-origin"}, http.StatusOK, ""},
		{"cross-site", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, `"https://evil.example"`},
		{"same-site", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden, `"https://evil.example"`},
		{"foreign origin without Sec-Fetch-Site", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, `"https://evil.example"`},
		{"allowed origin", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, http.StatusOK, ""},
		{"allowed origin without Sec-Fetch-Site", map[string]string{"Origin": "https://app.example"}, http.StatusOK, ""},
		{"DNS rebinding", map[string]string{"Host": "evil.example"}, http.StatusForbidden, "evil.example"},
		{"DNS rebinding with a port", map[string]string{"Host": "evil.example:" + port}, http.StatusForbidden, "evil.example"},
		{"localhost by name", map[string]string{"Host": "localhost:" + port}, http.StatusOK, ""},
		{"[::1] by address", map[string]string{"Host": "[::1]:" + port}, http.StatusOK, ""},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url+"/mcp", tc.headers, strings.NewReader(initializeBody))
			if r.status != tc.status || !strings.Contains(r.body, tc.body) {
				t.Fatalf("POST /mcp with %v = %d %q, want %d %q", tc.headers, r.status, r.body, tc.status, tc.body)
			}
			if tc.status == http.StatusOK && !initialized(r) {
				t.Errorf("an allowed request was not served: %q", r.body)
			}
		})
	}
	// A host allowed by name (a reverse proxy's) is served on every path; others are not.
	proxied := serveHTTP(t, h, gateway.HTTPOptions{AllowHosts: []string{"toolshed.internal"}})
	for _, tc := range []struct {
		host   string
		status int
	}{{"toolshed.internal", http.StatusOK}, {"toolshed.internal:443", http.StatusOK}, {"evil.example", http.StatusForbidden}} {
		r := post(t, proxied+"/mcp", map[string]string{"Host": tc.host}, strings.NewReader(initializeBody))
		if r.status != tc.status || tc.status == http.StatusOK && !initialized(r) {
			t.Errorf("POST /mcp with Host %s and --allow-host toolshed.internal = %d %q, want %d", tc.host, r.status, r.body, tc.status)
		}
	}
	// A real client from the allowed origin works; one from another origin cannot connect.
	cs := httpClient(t, url+"/mcp", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, nil, "")
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "from the app"}); resultText(res) != "from the app" {
		t.Errorf("alpha__echo from the allowed origin = %+v", res)
	}
	if _, closeFn, err := dialHTTP(url+"/mcp", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, nil, ""); err == nil {
		closeFn()
		t.Error("a client from a foreign origin connected")
	}
}

// paddedInitialize is an initialize request of exactly n bytes.
func paddedInitialize(t *testing.T, n int) string {
	t.Helper()
	body := strings.Replace(initializeBody, `"capabilities":{}`, `"capabilities":{},"padding":"%s"`, 1)
	pad := n - len(fmt.Sprintf(body, ""))
	if pad < 0 {
		t.Fatalf("an initialize request cannot be %d bytes", n)
	}
	return fmt.Sprintf(body, strings.Repeat("x", pad))
}

// chunked hides the length of a body, so that it is sent chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func testHTTPBodyLimit(t *testing.T, h *harness) {
	small := serveHTTP(t, h, gateway.HTTPOptions{MaxBodyBytes: 2048})
	def := serveHTTP(t, h, gateway.HTTPOptions{})
	for _, tc := range []struct {
		name   string
		url    string
		size   int
		chunk  bool
		status int
	}{
		{"under the limit", small, 2000, false, http.StatusOK},
		{"at the limit", small, 2048, false, http.StatusOK},
		{"over the limit", small, 2049, false, http.StatusRequestEntityTooLarge},
		{"far over the limit", small, 64 << 10, false, http.StatusRequestEntityTooLarge},
		{"over the limit, chunked", small, 4096, true, http.StatusRequestEntityTooLarge},
		{"default limit, under", def, 1 << 20, false, http.StatusOK},
		{"default limit (4 MiB), over", def, 4<<20 + 1, false, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(paddedInitialize(t, tc.size))
			if tc.chunk {
				body = chunked{body}
			}
			r := post(t, tc.url+"/mcp", nil, body)
			if r.status != tc.status {
				t.Fatalf("a %d-byte body = %d %.200q, want %d", tc.size, r.status, r.body, tc.status)
			}
			if tc.status == http.StatusOK && !initialized(r) {
				t.Errorf("not served: %.200q", r.body)
			}
		})
	}
	// A client's call within the limit works; one over it is refused (and the SDK's
	// client then closes its session).
	cs := httpClient(t, small+"/mcp", nil, nil, "")
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "small"}); resultText(res) != "small" {
		t.Errorf("a call within the limit: %+v", res)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": strings.Repeat("y", 4096)}})
	if err == nil || !strings.Contains(err.Error(), "Too Large") {
		t.Errorf("a call with a body over the limit = %v, want Request Entity Too Large", err)
	}
}

func testHTTPConcurrentSessions(t *testing.T, h *harness) {
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	type session struct {
		name     string
		cs       *mcp.ClientSession
		mu       sync.Mutex
		progress []*mcp.ProgressNotificationParams
	}
	var sessions []*session
	for i, version := range httpProtocols {
		s := &session{name: fmt.Sprintf("s%d", i)}
		s.cs = httpClient(t, url+"/mcp", nil, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, req.Params)
			s.mu.Unlock()
		}}, version)
		sessions = append(sessions, s)
	}
	if id0, id1 := sessions[0].cs.ID(), sessions[1].cs.ID(); id0 != "" && id0 == id1 {
		t.Errorf("two sessions share the id %q", id0)
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		// A slow call with progress, under the same token in both sessions, alongside
		// quick calls.
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{"steps": 3}}
			params.SetProgressToken("same-token")
			res, err := s.cs.CallTool(context.Background(), params)
			if err != nil || resultText(res) != "done 3 steps" {
				t.Errorf("%s: slow = %+v, %v", s.name, res, err)
			}
		})
		for i := range 10 {
			wg.Go(func() {
				text := fmt.Sprintf("%s call %d", s.name, i)
				res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": text}})
				if err != nil || resultText(res) != text {
					t.Errorf("%s: echo %q = %+v, %v", s.name, text, res, err)
				}
			})
		}
	}
	wg.Wait()
	for _, s := range sessions {
		waitFor(t, s.name+"'s 3 progress notifications", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.progress) >= 3
		})
		s.mu.Lock()
		if len(s.progress) != 3 {
			t.Errorf("%s got %d progress notifications, want its own 3", s.name, len(s.progress))
		}
		for i, p := range s.progress {
			if p.ProgressToken != "same-token" || p.Progress != float64(i+1) || p.Total != 3 {
				t.Errorf("%s: progress %d = %+v", s.name, i, p)
			}
		}
		s.mu.Unlock()
	}
}

func testHTTPToolListChanged(t *testing.T, h *harness) {
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	for i, version := range httpProtocols {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			changed := 0
			cs := httpClient(t, url+"/mcp", nil, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				mu.Lock()
				changed++
				mu.Unlock()
			}}, version)
			// The client may not be listening for changes yet right after connecting:
			// grow the server until a change reaches it.
			n := 100 * (i + 1)
			first := n
			waitFor(t, "notifications/tools/list_changed over HTTP", func() bool {
				if res := call(t, cs, "alpha__grow", map[string]any{"n": n}); resultText(res) != fmt.Sprintf("added extra_%d", n) {
					t.Fatalf("grow = %+v", res)
				}
				n++
				mu.Lock()
				defer mu.Unlock()
				return changed > 0
			})
			tool := fmt.Sprintf("alpha__extra_%d", first)
			waitFor(t, tool+" in tools/list", func() bool { return has(toolNames(t, cs), tool) })
			if res := call(t, cs, tool, map[string]any{}); resultText(res) != fmt.Sprintf("extra_%d", first) {
				t.Errorf("%s = %+v", tool, res)
			}
		})
	}
}
