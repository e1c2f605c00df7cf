package frontdoor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// addr is a net.Addr for the local address of a request.
type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

func TestGuard(t *testing.T) {
	reached := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }
	for _, tc := range []struct {
		name    string
		opts    Options
		local   string // the address the request came to
		method  string
		host    string
		headers map[string]string
		status  int
		says    string // in the refusal
	}{
		// DNS rebinding: a request to a loopback address must name a loopback host.
		{name: "localhost", local: "127.0.0.1:8787", host: "localhost:8787", status: 200},
		{name: "LOCALHOST", local: "127.0.0.1:8787", host: "LOCALHOST:8787", status: 200},
		{name: "localhost without port", local: "127.0.0.1:8787", host: "localhost", status: 200},
		{name: "127.0.0.1", local: "127.0.0.1:8787", host: "127.0.0.1:8787", status: 200},
		{name: "127.0.0.2 other port", local: "127.0.0.1:8787", host: "127.0.0.2:1", status: 200},
		{name: "[::1]", local: "[::1]:8787", host: "[::1]:8787", status: 200},
		{name: "[::1] without port", local: "127.0.0.1:8787", host: "[::1]", status: 200},
		{name: "rebound name", local: "127.0.0.1:8787", host: "evil.example", status: 403, says: `invalid Host header "evil.example"`},
		{name: "rebound name with port", local: "127.0.0.1:8787", host: "evil.example:8787", status: 403, says: "--allow-host"},
		{name: "localhost subdomain", local: "127.0.0.1:8787", host: "localhost.evil.example", status: 403},
		{name: "empty host", local: "127.0.0.1:8787", host: "", status: 403},
		{name: "private address as host", local: "[::1]:8787", host: "192.168.1.2:8787", status: 403},
		{name: "allowed host", opts: Options{AllowHosts: []string{"Toolshed.Internal"}}, local: "127.0.0.1:8787", host: "toolshed.internal:443", status: 200},
		{name: "another host than the allowed", opts: Options{AllowHosts: []string{"toolshed.internal"}}, local: "127.0.0.1:8787", host: "evil.example", status: 403},
		{name: "any host allowed", opts: Options{AllowHosts: []string{"*"}}, local: "127.0.0.1:8787", host: "evil.example", status: 200},
		{name: "not a loopback connection", local: "10.0.0.5:8787", host: "toolshed.example.com", status: 200},
		{name: "allowed host given with a port", opts: Options{AllowHosts: []string{"proxy.local:8443"}}, local: "127.0.0.1:8787", host: "proxy.local:8443", status: 200},
		{name: "allowed host given in brackets", opts: Options{AllowHosts: []string{"[fd00::1]"}}, local: "127.0.0.1:8787", host: "[fd00::1]:8787", status: 200},
		// Beyond loopback with no token, a name is a rebound name unless allowed.
		{name: "open, beyond loopback, a name", opts: Options{Open: true}, local: "10.0.0.5:8787", host: "evil.example:8787", status: 403, says: "DNS rebinding"},
		{name: "open, beyond loopback, the address", opts: Options{Open: true}, local: "10.0.0.5:8787", host: "10.0.0.5:8787", status: 200},
		{name: "open, beyond loopback, an IPv6 address", opts: Options{Open: true}, local: "[fd00::5]:8787", host: "[fd00::5]:8787", status: 200},
		{name: "open, beyond loopback, localhost", opts: Options{Open: true}, local: "10.0.0.5:8787", host: "localhost:8787", status: 200},
		{name: "open, beyond loopback, an allowed name", opts: Options{Open: true, AllowHosts: []string{"toolshed.lan"}}, local: "10.0.0.5:8787", host: "toolshed.lan:8787", status: 200},

		// Cross-origin protection.
		{name: "cross-site fetch", local: "127.0.0.1:8787", host: "localhost:8787", method: "POST",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, status: 403, says: "cross-origin request refused"},
		{name: "foreign origin", local: "127.0.0.1:8787", host: "localhost:8787", method: "POST",
			headers: map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, status: 403, says: `origin "http://evil.example" is not allowed`},
		{name: "allowed origin", opts: Options{AllowOrigins: []string{"http://app.example"}}, local: "127.0.0.1:8787", host: "localhost:8787", method: "POST",
			headers: map[string]string{"Origin": "http://app.example", "Content-Type": "application/json"}, status: 200},
		{name: "same origin", local: "127.0.0.1:8787", host: "localhost:8787", method: "POST",
			headers: map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, status: 200},
		{name: "cross-site GET", local: "127.0.0.1:8787", host: "localhost:8787",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: 200}, // safe methods pass

		// JSON bodies.
		{name: "json", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "POST",
			headers: map[string]string{"Content-Type": "application/json"}, status: 200},
		{name: "json charset", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "POST",
			headers: map[string]string{"Content-Type": "Application/JSON; charset=utf-8"}, status: 200},
		{name: "text/plain", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "POST",
			headers: map[string]string{"Content-Type": "text/plain"}, status: 415, says: `unsupported Content-Type "text/plain"`},
		{name: "form", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "PUT",
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415},
		{name: "no content type", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "POST", status: 415, says: "application/json"},
		{name: "json-like", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "PATCH",
			headers: map[string]string{"Content-Type": "application/jsonx"}, status: 415},
		{name: "unparsable", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", method: "POST",
			headers: map[string]string{"Content-Type": "application/json; charset"}, status: 415},
		{name: "GET needs no content type", opts: Options{RequireJSON: true}, local: "127.0.0.1:1", host: "localhost", status: 200},
		{name: "text/plain without RequireJSON", local: "127.0.0.1:1", host: "localhost", method: "POST",
			headers: map[string]string{"Content-Type": "text/plain"}, status: 200},

		// The request: every check refuses it; the Host first.
		{name: "issue 16", opts: Options{RequireJSON: true}, local: "127.0.0.1:8787", host: "evil.example", method: "POST",
			headers: map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, status: 403, says: "Host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Guard(http.HandlerFunc(reached), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			r := httptest.NewRequest(method, "/v1/messages", strings.NewReader("{}"))
			r.Host = tc.host
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr(tc.local))))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			body := w.Body.String()
			if w.Code != tc.status || (tc.status == 200) != (body == "reached") || !strings.Contains(body, tc.says) {
				t.Errorf("%s %s (Host %q) = %d %q, want %d %q", method, r.URL, tc.host, w.Code, body, tc.status, tc.says)
			}
		})
	}
}

// A browser app of an allowed origin gets its preflight answered and the answers name
// it; another origin's preflight is refused; a refused request's connection closes.
func TestGuardCORS(t *testing.T) {
	h, err := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }),
		Options{AllowOrigins: []string{"http://app.example"}, RequireJSON: true})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, origin string, headers map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader("{}"))
		r.Host = "localhost:8080"
		r.Header.Set("Origin", origin)
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr("127.0.0.1:8080"))))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, mcp-session-id"}
	w := serve(http.MethodOptions, "http://app.example", preflight)
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "http://app.example" ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Errorf("an allowed origin's preflight = %d %v", w.Code, w.Header())
	}
	w = serve(http.MethodPost, "http://app.example", map[string]string{"Content-Type": "application/json"})
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "http://app.example" ||
		!strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("an allowed origin's POST = %d %v", w.Code, w.Header())
	}
	// Another origin's preflight is not answered for CORS (it goes on to the handler, as
	// an OPTIONS request): without Access-Control-Allow-Origin, the browser sends nothing.
	w = serve(http.MethodOptions, "http://evil.example", preflight)
	if w.Header().Get("Access-Control-Allow-Origin") != "" || w.Header().Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("another origin's preflight = %d %v, want no CORS answer", w.Code, w.Header())
	}
	w = serve(http.MethodPost, "http://evil.example", map[string]string{"Content-Type": "application/json"})
	if w.Code != http.StatusForbidden || w.Header().Get("Connection") != "close" {
		t.Errorf("another origin's POST = %d %v, want 403 closing the connection", w.Code, w.Header())
	}
	w = serve(http.MethodPost, "http://app.example", map[string]string{"Content-Type": "text/plain"})
	if w.Code != http.StatusUnsupportedMediaType || w.Header().Get("Connection") != "close" {
		t.Errorf("a text/plain POST = %d %v, want 415 closing the connection", w.Code, w.Header())
	}
}

func TestGuardDeny(t *testing.T) {
	var got []string
	h, _ := Guard(http.NotFoundHandler(), Options{Deny: func(w http.ResponseWriter, r *http.Request, status int, message string) {
		got = append(got, message)
		w.WriteHeader(status)
	}})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "evil.example"
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr("127.0.0.1:1"))))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 || len(got) != 1 || !strings.Contains(got[0], "DNS rebinding") {
		t.Errorf("Deny got %q with %d", got, w.Code)
	}
}

func TestGuardBadOrigin(t *testing.T) {
	h, err := Guard(http.NotFoundHandler(), Options{AllowOrigins: []string{"app.example", "http://ok.example"}})
	if h == nil || !errors.Is(err, ErrBadOrigin) || !strings.Contains(err.Error(), `"app.example"`) {
		t.Errorf("Guard with a bad origin = %v, %v; want a handler and ErrBadOrigin naming it", h, err)
	}
	if err := CheckOrigin("https://app.example:8443"); err != nil {
		t.Errorf("CheckOrigin of a good origin: %v", err)
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer secret", "secret", true},
		{"bearer secret", "secret", true}, // RFC 7235: the scheme is case-insensitive
		{"BEARER secret", "secret", true},
		{"Bearer   secret ", "secret", true},
		{"Bearer ", "", false},
		{"Bearer", "", false},
		{"Basic c2VjcmV0", "", false},
		{"Bearersecret", "", false},
		{"", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if tok, ok := Bearer(r); tok != tc.token || ok != tc.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tc.header, tok, ok, tc.token, tc.ok)
		}
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		equal     bool
	}{
		{"secret", "secret", true},
		{"secret", "Secret", false},
		{"secre", "secret", false},
		{"secret2", "secret", false},
		{"", "secret", false},
	} {
		if Equal(tc.got, tc.want) != tc.equal {
			t.Errorf("Equal(%q, %q) = %v", tc.got, tc.want, !tc.equal)
		}
	}
}

func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer x", "bearer  y", "Basic z", "", " ", "Bearer"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Authorization"] = []string{header}
		tok, ok := Bearer(r)
		if ok != (tok != "") || strings.HasPrefix(tok, " ") || strings.HasSuffix(tok, " ") {
			t.Errorf("Bearer(%q) = %q, %v", header, tok, ok)
		}
	})
}
