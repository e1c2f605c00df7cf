package embed_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/embed"
)

// TestEndpointPasswordNeverShown: a key given as the endpoint URL's password (Basic
// authentication, https://user:KEY@host/...) is sent, but never appears in what the
// client says of the endpoint, which goes to logs and lint output: Endpoint and every
// error.
func TestEndpointPasswordNeverShown(t *testing.T) {
	const secret = "sk-in-the-url"
	t.Setenv(embed.APIKeyEnv, "") // no bearer key: the URL's user and password are sent
	var gotUser, gotPass string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUser, gotPass, _ = r.BasicAuth()
		http.Error(w, `{"error":{"message":"the model crashed"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	for _, host := range []string{strings.TrimPrefix(srv.URL, "http://"), down} {
		c, err := embed.New(embed.Options{URL: "http://key:" + secret + "@" + host + "/v1/embeddings", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.Endpoint(), secret) {
			t.Errorf("Endpoint() = %q shows the password", c.Endpoint())
		}
		_, err = c.Query(context.Background(), "x")
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %v shows the password (or is nil)", host, err)
		}
	}
	if gotUser != "key" || gotPass != secret {
		t.Errorf("the server got Basic %q:%q; want the URL's user and password sent", gotUser, gotPass)
	}
}
