package resource_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolshed/toolshed/oauth/resource"
)

const aud = "https://toolshed.example.com/mcp"

// newVerifier returns a Verifier for is, whose log lines are kept in *logs.
func newVerifier(t *testing.T, is *testIssuer, edit func(*resource.Options)) (*resource.Verifier, *[]string) {
	t.Helper()
	var mu sync.Mutex
	logs := &[]string{}
	opts := resource.Options{Issuer: is.srv.URL, Audience: aud, Scopes: []string{"mcp:read"},
		IntrospectionClientID: introID, IntrospectionClientSecret: introSecret,
		Logf: func(f string, a ...any) { mu.Lock(); *logs = append(*logs, fmt.Sprintf(f, a...)); mu.Unlock() }}
	if edit != nil {
		edit(&opts)
	}
	v, err := resource.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v, logs
}

func TestVerifyJWT(t *testing.T) {
	is := newTestIssuer(t)
	v, logs := newVerifier(t, is, nil)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(&is.key("k1").PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})

	none := func(c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, c)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hmac := func(c jwt.MapClaims, secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := is.claims(aud, nil)
	tests := []struct {
		name  string
		token string
		want  string // in the error; "" means accepted
	}{
		{"valid", is.sign("k1", good), ""},
		{"audience among several", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { c["aud"] = []any{"https://other.example.com", aud} })), ""},
		{"client credentials, no sub", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { delete(c, "sub") })), ""},
		{"expired within leeway", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-10 * time.Second).Unix() })), ""},
		{"another audience", is.sign("k1", is.claims("https://other.example.com/mcp", nil)), "another audience"},
		{"no audience", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { delete(c, "aud") })), "required claim"},
		{"expired", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-5 * time.Minute).Unix() })), "expired"},
		{"no exp", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { delete(c, "exp") })), "exp"},
		{"not yet valid", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })), "not valid yet"},
		{"another issuer", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" })), "another issuer"},
		{"no subject nor client", is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { delete(c, "sub"); delete(c, "client_id") })), "no subject"},
		{"alg none", none(good), "algorithm toolshed refuses"},
		{"HS256 with the public key as secret", hmac(good, pubPEM), "algorithm toolshed refuses"},
		{"HS256 with the DER public key as secret", hmac(good, pubDER), "algorithm toolshed refuses"},
		{"signed by a key the issuer does not publish, its kid", signWith(t, other, "k1", good), "signature is not valid"},
		{"tampered signature", tamper(is.sign("k1", good)), "signature is not valid"},
		{"malformed", "a.b.c", "not a well-formed JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := v.Verify(ctx(t), tt.token, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if info.UserID == "" || info.Expiration.IsZero() || !slices.Contains(info.Scopes, "mcp:read") {
					t.Fatalf("info = %+v", info)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v", info)
			}
			if !errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, resource.ErrInvalidToken) {
				t.Errorf("error %v does not wrap ErrInvalidToken", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error repeats the token")
			}
		})
	}
	for _, l := range *logs {
		for _, tt := range tests {
			if strings.Contains(l, tt.token) {
				t.Errorf("log line repeats a token: %s", l)
			}
		}
	}
}

// tamper changes a byte of a JWS's signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p := []byte(parts[2])
	if p[5] == 'A' {
		p[5] = 'B'
	} else {
		p[5] = 'A'
	}
	return parts[0] + "." + parts[1] + "." + string(p)
}

func TestVerifyInfo(t *testing.T) {
	is := newTestIssuer(t)
	v, _ := newVerifier(t, is, nil)
	info, err := v.Verify(ctx(t), is.sign("k1", is.claims(aud, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.UserID != "alice" || !slices.Equal(info.Scopes, []string{"mcp:read", "mcp:write"}) {
		t.Errorf("info = %+v", info)
	}
	if g, _ := info.Extra["groups"].([]any); len(g) != 2 {
		t.Errorf("groups claim lost: %v", info.Extra)
	}
	if m := resource.MissingScopes(info, []string{"mcp:read", "mcp:admin"}); !slices.Equal(m, []string{"mcp:admin"}) {
		t.Errorf("MissingScopes = %v", m)
	}
	// A profile's own resource URL: its token is accepted there, and not at /mcp alone.
	eng := is.sign("k1", is.claims(aud+"/eng", nil))
	if _, err := v.VerifyAudience(ctx(t), eng, aud, aud+"/eng"); err != nil {
		t.Errorf("a token for %s/eng at /mcp/eng: %v", aud, err)
	}
	if _, err := v.Verify(ctx(t), eng, nil); err == nil {
		t.Errorf("a token for %s/eng accepted at /mcp", aud)
	}
	// scp as a list (Okta, Azure).
	info, err = v.Verify(ctx(t), is.sign("k1", is.claims(aud, func(c jwt.MapClaims) { delete(c, "scope"); c["scp"] = []any{"mcp:read"} })), nil)
	if err != nil || !slices.Equal(info.Scopes, []string{"mcp:read"}) {
		t.Errorf("scp: %+v, %v", info, err)
	}
}

// TestRotation: a token signed with a new key is accepted without a restart (its
// unknown kid fetches the key set again), and once the old key is gone from the set a
// token signed with it is refused.
func TestRotation(t *testing.T) {
	is := newTestIssuer(t)
	v, _ := newVerifier(t, is, nil)
	old := is.sign("k1", is.claims(aud, nil))
	if _, err := v.Verify(ctx(t), old, nil); err != nil {
		t.Fatal(err)
	}
	is.addKey("k2")
	is.removeKey("k1")
	fresh := is.sign("k2", is.claims(aud, nil))
	if _, err := v.Verify(ctx(t), fresh, nil); err != nil {
		t.Fatalf("a token of the new key is refused: %v", err)
	}
	if _, err := v.Verify(ctx(t), old, nil); err == nil || !strings.Contains(err.Error(), "key the issuer does not publish") {
		t.Fatalf("a token of the rotated-out key: %v", err)
	}
}

// TestForgedKidFlood: tokens naming key ids the issuer never published make toolshed
// fetch the key set at most once per MinRefresh, however many arrive.
func TestForgedKidFlood(t *testing.T) {
	is := newTestIssuer(t)
	v, _ := newVerifier(t, is, nil) // MinRefresh: a minute
	if _, err := v.Verify(ctx(t), is.sign("k1", is.claims(aud, nil)), nil); err != nil {
		t.Fatal(err)
	}
	before := is.jwksFetches.Load()
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			tok := signWith(t, forger, fmt.Sprintf("forged-%d", i), is.claims(aud, nil))
			if _, err := v.Verify(ctx(t), tok, nil); err == nil {
				t.Errorf("forged token %d accepted", i)
			}
		})
	}
	wg.Wait()
	if n := is.jwksFetches.Load() - before; n > 1 {
		t.Errorf("200 forged key ids fetched the key set %d times; want at most 1", n)
	}
}

func TestIntrospection(t *testing.T) {
	is := newTestIssuer(t)
	exp := float64(time.Now().Add(time.Hour).Unix())
	is.addOpaque("opaque-good-7f3a", map[string]any{"active": true, "iss": is.srv.URL, "aud": aud, "sub": "bob", "scope": "mcp:read", "exp": exp})
	is.addOpaque("opaque-other-aud", map[string]any{"active": true, "iss": is.srv.URL, "aud": "https://other.example.com", "sub": "bob", "exp": exp})
	is.addOpaque("opaque-other-iss", map[string]any{"active": true, "iss": "https://evil.example.com", "aud": aud, "sub": "bob", "exp": exp})
	is.addOpaque("opaque-expired", map[string]any{"active": true, "iss": is.srv.URL, "aud": aud, "sub": "bob", "exp": float64(time.Now().Add(-time.Hour).Unix())})
	v, _ := newVerifier(t, is, nil)
	for _, tt := range []struct{ token, want string }{
		{"opaque-good-7f3a", ""},
		{"opaque-unknown", "not active"},
		{"opaque-other-aud", "another audience"},
		{"opaque-other-iss", "another issuer"},
		{"opaque-expired", "expired"},
	} {
		info, err := v.Verify(ctx(t), tt.token, nil)
		if tt.want == "" {
			if err != nil || info.UserID != "bob" || !slices.Equal(info.Scopes, []string{"mcp:read"}) {
				t.Errorf("%s: %+v, %v", tt.token, info, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), tt.token) {
			t.Errorf("%s: error %v, want one saying %q", tt.token, err, tt.want)
		}
	}
	// The answer is cached: the same token again asks the issuer no more.
	n := is.introspected.Load()
	if _, err := v.Verify(ctx(t), "opaque-good-7f3a", nil); err != nil || is.introspected.Load() != n {
		t.Errorf("second check: %v, %d introspections more", err, is.introspected.Load()-n)
	}

	// Without an introspection client, an opaque token is refused with the reason.
	v2, _ := newVerifier(t, is, func(o *resource.Options) { o.IntrospectionClientID, o.IntrospectionClientSecret = "", "" })
	if _, err := v2.Verify(ctx(t), "opaque-good-7f3a", nil); err == nil || !strings.Contains(err.Error(), "introspection") {
		t.Errorf("opaque token without introspection: %v", err)
	}
	// A wrong client secret is the operator's problem, not the token's.
	v3, logs := newVerifier(t, is, func(o *resource.Options) { o.IntrospectionClientSecret = "wrong" })
	_, err := v3.Verify(ctx(t), "opaque-good-7f3a", nil)
	if !errors.Is(err, resource.ErrUnavailable) || errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("wrong introspection secret: %v", err)
	}
	if len(*logs) == 0 || !strings.Contains(strings.Join(*logs, "\n"), "client id and secret") {
		t.Errorf("logs %q do not say what to check", *logs)
	}
}

func TestIssuerDown(t *testing.T) {
	is := newTestIssuer(t)
	url := is.srv.URL
	is.srv.Close()
	v, logs := newVerifier(t, is, func(o *resource.Options) { o.Issuer = url })
	_, err := v.Verify(ctx(t), "x.y.z", nil)
	if !errors.Is(err, resource.ErrUnavailable) || errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("issuer down: %v", err)
	}
	if len(*logs) != 1 {
		t.Fatalf("logs = %q", *logs)
	}
	// Within discoveryRetry, the same error again without asking.
	if _, err2 := v.Verify(ctx(t), "x.y.z", nil); err2 == nil || len(*logs) != 1 {
		t.Errorf("second try: %v, logs %q", err2, *logs)
	}
}

func TestNewOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts resource.Options
		want string
	}{
		{"no issuer", resource.Options{Audience: aud}, "issuer"},
		{"http issuer", resource.Options{Issuer: "http://login.example.com", Audience: aud}, "https"},
		{"no audience", resource.Options{Issuer: "https://login.example.com"}, "audience is empty"},
		{"relative audience", resource.Options{Issuer: "https://login.example.com", Audience: "/mcp"}, "absolute URL"},
		{"HMAC algorithm", resource.Options{Issuer: "https://login.example.com", Audience: aud, Algorithms: []string{"HS256"}}, "asymmetric"},
		{"half a client", resource.Options{Issuer: "https://login.example.com", Audience: aud, IntrospectionClientID: "x"}, "both"},
		{"bad scope", resource.Options{Issuer: "https://login.example.com", Audience: aud, Scopes: []string{"a b"}}, "scope"},
	} {
		_, err := resource.New(tt.opts)
		if !errors.Is(err, resource.ErrOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

func TestMetadataURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://h.example.com/mcp":       "https://h.example.com/.well-known/oauth-protected-resource/mcp",
		"https://h.example.com/":          "https://h.example.com/.well-known/oauth-protected-resource",
		"https://h.example.com":           "https://h.example.com/.well-known/oauth-protected-resource",
		"http://127.0.0.1:8080/x/mcp/eng": "http://127.0.0.1:8080/.well-known/oauth-protected-resource/x/mcp/eng",
	} {
		if got := resource.MetadataURL(in); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChallenge(t *testing.T) {
	c := resource.Challenge{ResourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp", Scope: "mcp:read mcp:write", Error: "insufficient_scope", Description: `say "hi"\` + "\n"}
	want := `Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:write", error="insufficient_scope", error_description="say \"hi\"\\"`
	if got := c.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := (resource.Challenge{}).String(); got != "Bearer" {
		t.Errorf("empty challenge: %q", got)
	}
}
