package embed_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// TestEndpointSecretsNeverShown: a key in the endpoint URL's query (?api-key=, ?key=,
// as Azure and Google take one) and a key an endpoint's error answer echoes ("Incorrect
// API key provided: sk-…") appear in no message: not in Endpoint, not in an error.
func TestEndpointSecretsNeverShown(t *testing.T) {
	const key = "sk-proj-abcdef0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	for _, tc := range []struct{ name, url, secret string }{
		{"api-key parameter", srv.URL + "/v1/embeddings?api-version=2024-02-01&api-key=az-secret-1", "az-secret-1"},
		{"key parameter", srv.URL + "/v1/embeddings?key=AIza-secret-2", "AIza-secret-2"},
		{"echoed bearer key", srv.URL + "/v1/embeddings", key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := embed.New(embed.Options{URL: tc.url, Model: "m", APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(c.Endpoint(), tc.secret) {
				t.Errorf("Endpoint() = %q shows the key", c.Endpoint())
			}
			_, err = c.Query(context.Background(), "x")
			if !errors.Is(err, embed.ErrUnavailable) || strings.Contains(err.Error(), tc.secret) || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "Incorrect API key provided: xxxxx.") {
				t.Errorf("error %v shows a key, or is not the endpoint's 401", err)
			}
		})
	}
}

// TestRedirectToAnotherOriginNotFollowed: an endpoint that redirects (307, which keeps
// the POST body) to another origin (another host, or another port of the same host, to
// which Go's client would send the bearer key) is not followed: the request fails as a
// bad response naming where it was sent, and the other server gets nothing, neither the
// texts nor the key. A redirect within the endpoint's origin is followed.
func TestRedirectToAnotherOriginNotFollowed(t *testing.T) {
	const key = "sk-redirect-key-0123"
	var mu sync.Mutex
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+" "+string(body))
		mu.Unlock()
		w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0]}]}`))
	}))
	defer other.Close()
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same-port":
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
		case "/moved":
			w.Write([]byte(`{"data":[{"index":0,"embedding":[0,1]}]}`))
		case "/other-port": // the same host name, another port
			http.Redirect(w, r, "http://127.0.0.1:"+otherPort+"/v1/embeddings", http.StatusTemporaryRedirect)
		default: // another host name
			http.Redirect(w, r, "http://localhost:"+otherPort+"/v1/embeddings?key=from-location", http.StatusTemporaryRedirect)
		}
	}))
	defer endpoint.Close()
	for _, path := range []string{"/other-port", "/other-host"} {
		c, err := embed.New(embed.Options{URL: endpoint.URL + path, Model: "m", APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Query(context.Background(), "the user's query")
		if !errors.Is(err, embed.ErrBadResponse) || !strings.Contains(err.Error(), "redirected to another origin") || strings.Contains(err.Error(), "from-location") {
			t.Errorf("%s: err = %v; want ErrBadResponse saying it was redirected to another origin, the Location's key hidden", path, err)
		}
	}
	mu.Lock()
	if len(got) > 0 {
		t.Errorf("the other origin received %q", got)
	}
	mu.Unlock()
	c, err := embed.New(embed.Options{URL: endpoint.URL + "/same-port", Model: "m", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Query(context.Background(), "x"); err != nil || len(v) != 2 || v[1] != 1 {
		t.Errorf("a redirect within the origin: %v, %v; want it followed", v, err)
	}
}
