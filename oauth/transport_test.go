package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// TestUnsignedChallenge: without a credential, a 401 means sign-in when it asks
// for a Bearer token or the config asks for sign-in; another 401 (an API that wants
// a key in a header) is the server's answer, passed on.
func TestUnsignedChallenge(t *testing.T) {
	for _, tt := range []struct {
		name      string
		challenge string
		signIn    bool
		want      bool
	}{
		{"MCP challenge", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`, false, true},
		{"bare Bearer", `Bearer`, false, true},
		{"no challenge", ``, false, false},
		{"Basic", `Basic realm="api"`, false, false},
		{"no challenge, oauth configured", ``, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.challenge != "" {
					w.Header().Set("WWW-Authenticate", tt.challenge)
				}
				w.WriteHeader(http.StatusUnauthorized)
			}))
			defer srv.Close()
			store := &FileStore{Path: filepath.Join(t.TempDir(), "c.json")}
			tr, err := NewTransport(context.Background(), Server{Name: "s", URL: srv.URL + "/mcp", SignIn: tt.signIn}, store, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Post(srv.URL+"/mcp", "application/json", nil)
			if got := errors.Is(err, ErrNotSignedIn); got != tt.want {
				t.Fatalf("needs sign-in = %v (%v), want %v", got, err, tt.want)
			}
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
