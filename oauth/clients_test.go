package oauth_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
)

// freeRedirect returns a loopback redirect URI on a port free now, for a client
// registered with a fixed one.
func freeRedirect(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprintf("http://%s/callback", ln.Addr())
}

// TestLoginPreregistered: with a client id and secret from the config, Login signs in
// as that client (client_secret_basic at the real provider), registers nothing, and
// the stored credential calls the server.
func TestLoginPreregistered(t *testing.T) {
	ctx := ctxFor(t)
	redirect := freeRedirect(t)
	p, srv, store := setup(t, testoidc.Options{Clients: []map[string]any{{
		"client_id": "toolshed-pre", "client_secret": "pre-secret-value", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "client_secret_basic", "application_type": "native",
	}}})
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{ClientID: "toolshed-pre", ClientSecret: "pre-secret-value", RedirectURL: redirect})
	if c.ClientID != "toolshed-pre" || c.ClientSecret != "pre-secret-value" {
		t.Errorf("credential of client %q", c.ClientID)
	}
	if reg, err := store.Registration(ctx, p.Issuer()); err != nil || reg != nil {
		t.Errorf("a pre-registered client registered one too: %+v, %v", reg, err)
	}
	cs, err := connect(t, ctx, srv, store)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := callText(ctx, cs, "whoami", nil); err != nil || !containsUser(who) {
		t.Errorf("whoami: %s, %v", who, err)
	}
}

// TestLoginClientMetadataDocument: with a client ID metadata document URL, at an
// authorization server that supports those, Login signs in with the URL as its
// client id: the provider fetches the document (over https) and registers nothing.
func TestLoginClientMetadataDocument(t *testing.T) {
	ctx := ctxFor(t)
	redirect := freeRedirect(t)
	var fetched atomic.Int32
	doc := httptest.NewUnstartedServer(nil)
	doc.StartTLS()
	defer doc.Close()
	docURL := doc.URL + "/toolshed-client.json"
	doc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/toolshed-client.json" {
			http.NotFound(w, r)
			return
		}
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"client_id": docURL, "client_name": "toolshed", "redirect_uris": []string{redirect},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"token_endpoint_auth_method": "none", "application_type": "native",
		})
	})
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: doc.Certificate().Raw})
	p, srv, store := setup(t, testoidc.Options{TrustCAPEM: ca})
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{ClientMetadataURL: docURL, RedirectURL: redirect})
	if c.ClientID != docURL || fetched.Load() == 0 {
		t.Errorf("client id %q, document fetched %d times", c.ClientID, fetched.Load())
	}
	if reg, err := store.Registration(ctx, p.Issuer()); err != nil || reg != nil {
		t.Errorf("a metadata-document client registered one too: %+v, %v", reg, err)
	}
	cs, err := connect(t, ctx, srv, store)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := callText(ctx, cs, "whoami", nil); err != nil || !containsUser(who) {
		t.Errorf("whoami: %s, %v", who, err)
	}
}

func containsUser(who string) bool {
	var w struct {
		Sub string `json:"sub"`
	}
	return json.Unmarshal([]byte(who), &w) == nil && w.Sub == testoidc.DefaultUser.Name
}
