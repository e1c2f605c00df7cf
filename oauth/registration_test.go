package oauth_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
)

// registrations sends requests with http.DefaultTransport and counts the POSTs to
// each host's registration endpoint (/reg), as a proxy in front of it would.
type registrations struct {
	mu sync.Mutex
	n  map[string]int // host → registrations
}

func (r *registrations) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.URL.Path == "/reg" {
		r.mu.Lock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[req.URL.Host]++
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (r *registrations) at(p *testoidc.Provider) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[strings.TrimPrefix(p.Issuer(), "http://")]
}

// TestRegistrationReused: sign-ins to two servers of one issuer, on two random
// loopback ports, register one client; a stored client the server no longer knows
// is registered again; and another issuer gets its own client, never the first
// one's.
func TestRegistrationReused(t *testing.T) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	srv1 := oauth.Server{Name: "one", URL: testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})}
	srv2 := oauth.Server{Name: "two", URL: testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})}
	store := &oauth.FileStore{Path: filepath.Join(t.TempDir(), "credentials.json")}
	count := &registrations{}
	var out bytes.Buffer
	opts := oauth.LoginOptions{HTTPClient: &http.Client{Transport: count}, Out: &out}

	c1, b1 := login(t, ctx, p, srv1, store, opts)
	c2, b2 := login(t, ctx, p, srv2, store, opts)
	if n := count.at(p); n != 1 {
		t.Fatalf("two sign-ins at one issuer registered %d clients, want 1", n)
	}
	if c1.ClientID != c2.ClientID {
		t.Errorf("the second sign-in used client %q, not the registered %q", c2.ClientID, c1.ClientID)
	}
	if port := func(u string) string { return strings.Split(strings.TrimPrefix(u, "http://127.0.0.1:"), "/")[0] }; port(b1.redirect) == port(b2.redirect) {
		t.Logf("both sign-ins happened to get loopback port %s", port(b1.redirect))
	}
	for _, srv := range []oauth.Server{srv1, srv2} {
		cs, err := connect(t, ctx, srv, store)
		if err != nil {
			t.Fatalf("connect %s: %v", srv.Name, err)
		}
		if _, err := callText(ctx, cs, "whoami", nil); err != nil {
			t.Fatalf("whoami at %s: %v", srv.Name, err)
		}
	}

	// A client the authorization server does not know (deleted, or the server's
	// database reset): the sign-in registers a new one and keeps it.
	reg, err := store.Registration(ctx, p.Issuer())
	if err != nil || reg == nil {
		t.Fatalf("stored registration: %v, %v", reg, err)
	}
	gone := *reg
	gone.ClientID = "forgotten-client"
	if err := store.SetRegistration(ctx, p.Issuer(), &gone); err != nil {
		t.Fatal(err)
	}
	c3, _ := login(t, ctx, p, srv1, store, opts)
	if n := count.at(p); n != 2 {
		t.Fatalf("after the stored client was refused: %d registrations, want 2", n)
	}
	if c3.ClientID == "forgotten-client" || c3.ClientID == c1.ClientID {
		t.Errorf("sign-in after the refusal used client %q", c3.ClientID)
	}
	if reg, _ := store.Registration(ctx, p.Issuer()); reg == nil || reg.ClientID != c3.ClientID {
		t.Errorf("the new registration is not kept: %+v", reg)
	}

	// Another issuer: its own registration; the first issuer's client is not offered.
	q := testoidc.Start(t, testoidc.Options{})
	srvQ := oauth.Server{Name: "other", URL: testoidc.StartProtected(t, q, testoidc.ProtectedOptions{})}
	cq, _ := login(t, ctx, q, srvQ, store, opts)
	if n := count.at(q); n != 1 {
		t.Fatalf("sign-in at another issuer registered %d clients, want 1", n)
	}
	if cq.ClientID == c3.ClientID || strings.Contains(q.Log(), c3.ClientID) {
		t.Errorf("the other issuer saw the first issuer's client %q", c3.ClientID)
	}
	if reg, _ := store.Registration(ctx, p.Issuer()); reg == nil || reg.ClientID != c3.ClientID {
		t.Errorf("the first issuer's registration changed: %+v", reg)
	}
	for _, c := range []*oauth.Credential{c1, c2, c3, cq} {
		noSecret(t, out.String(), c)
	}
}
