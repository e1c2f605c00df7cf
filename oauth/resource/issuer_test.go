package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// testIssuer is an authorization server on loopback, as far as a resource server sees
// one: its RFC 8414 metadata, its key set (served by jwkset from keys the test
// generates) and an introspection endpoint. Tokens are signed with golang-jwt, the
// library a real issuer in Go would use; the end-to-end tests use a real oidc-provider.
type testIssuer struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex
	keys   map[string]*ecdsa.PrivateKey // kid -> key, as published
	opaque map[string]map[string]any    // opaque token -> introspection answer

	jwksFetches  atomic.Int64
	introspected atomic.Int64
}

const (
	introID     = "toolshed-rs"
	introSecret = "introspection-secret-5d1c"
)

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{t: t, keys: map[string]*ecdsa.PrivateKey{}, opaque: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                           is.srv.URL,
			"authorization_endpoint":           is.srv.URL + "/authorize",
			"token_endpoint":                   is.srv.URL + "/token",
			"jwks_uri":                         is.srv.URL + "/jwks",
			"introspection_endpoint":           is.srv.URL + "/introspect",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetches.Add(1)
		set := jwkset.NewMemoryStorage()
		is.mu.Lock()
		for kid, k := range is.keys {
			j, err := jwkset.NewJWKFromKey(&k.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgES256, USE: jwkset.UseSig}})
			if err != nil {
				t.Errorf("jwk: %v", err)
			}
			set.KeyWrite(r.Context(), j)
		}
		is.mu.Unlock()
		b, err := set.JSONPublic(r.Context())
		if err != nil {
			t.Errorf("jwks: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		is.introspected.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != introID || secret != introSecret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		ans, found := is.opaque[r.FormValue("token")]
		is.mu.Unlock()
		if !found {
			ans = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.addKey("k1")
	return is
}

// addKey publishes a new signing key.
func (is *testIssuer) addKey(kid string) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
	return k
}

func (is *testIssuer) removeKey(kid string) {
	is.mu.Lock()
	delete(is.keys, kid)
	is.mu.Unlock()
}

func (is *testIssuer) key(kid string) *ecdsa.PrivateKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[kid]
}

// claims are a valid token's claims for audience aud, changed by edit.
func (is *testIssuer) claims(aud string, edit func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": is.srv.URL, "sub": "alice", "aud": aud, "scope": "mcp:read mcp:write",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"groups": []any{"platform", "sre"}, "client_id": "cli",
	}
	if edit != nil {
		edit(c)
	}
	return c
}

// sign signs claims with the published key kid (ES256).
func (is *testIssuer) sign(kid string, c jwt.MapClaims) string {
	return signWith(is.t, is.key(kid), kid, c)
}

func signWith(t *testing.T, k *ecdsa.PrivateKey, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (is *testIssuer) addOpaque(token string, answer map[string]any) {
	is.mu.Lock()
	is.opaque[token] = answer
	is.mu.Unlock()
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
