package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCheckRedirectURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/callback", true},
		{"http://127.0.0.2/cb", true},
		{"http://[::1]:9000/callback", true},
		{"http://localhost:7777/oauth/callback", true},
		{"https://127.0.0.1/callback", false}, // no TLS on a loopback listener
		{"http://evil.example/callback", false},
		{"http://127.0.0.1.evil.example/callback", false},
		{"http://10.0.0.1/callback", false},
		{"cursor://anysphere.cursor-mcp/oauth/callback", false},
		{"::", false},
	}
	for _, tt := range tests {
		_, err := CheckRedirectURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckRedirectURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
		if err != nil && !strings.Contains(tt.url, "::") && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("CheckRedirectURL(%q) = %v, want ErrNotLoopback", tt.url, err)
		}
	}
	if _, err := listenLoopback("http://evil.example/callback", 0); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("listening for a non-loopback redirect: %v", err)
	}
}

// TestCallbackState: the listener takes one response, with the state of the request
// it waits for, once; a response with another state, a replay of the one taken, or
// one sent to another Host name, is refused.
func TestCallbackState(t *testing.T) {
	cb, err := listenLoopback("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	authURL := "http://as.example/auth?" + url.Values{
		"redirect_uri": {cb.redirectURL}, "state": {"the-state"}, "code_challenge_method": {"S256"}, "code_challenge": {"x"},
	}.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shown := make(chan struct{})
	type result struct {
		code, iss string
		err       error
	}
	done := make(chan result, 1)
	go func() {
		r, err := cb.fetch(ctx, authURL, func(string) error { close(shown); return nil })
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{code: r.Code, iss: r.Iss}
	}()
	<-shown
	send := func(q url.Values, host string) int {
		req, _ := http.NewRequest(http.MethodGet, cb.redirectURL+"?"+q.Encode(), nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	good := url.Values{"code": {"c1"}, "state": {"the-state"}, "iss": {"http://as.example"}}
	if st := send(url.Values{"code": {"stolen"}, "state": {"other-state"}}, ""); st != http.StatusBadRequest {
		t.Errorf("a response with another state: %d, want 400", st)
	}
	if st := send(good, "evil.example"); st != http.StatusNotFound {
		t.Errorf("a response to another Host: %d, want 404", st)
	}
	if st := send(good, ""); st != http.StatusOK {
		t.Fatalf("the response: %d", st)
	}
	if st := send(url.Values{"code": {"c2"}, "state": {"the-state"}}, ""); st != http.StatusBadRequest {
		t.Errorf("the state replayed: %d, want 400", st)
	}
	r := <-done
	if r.err != nil || r.code != "c1" || r.iss != "http://as.example" {
		t.Fatalf("fetch = %+v", r)
	}
}

// TestCallbackRefusesForeignRedirect: an authorization URL that would send the
// browser anywhere but the listener is not shown.
func TestCallbackRefusesForeignRedirect(t *testing.T) {
	cb, err := listenLoopback("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	for _, q := range []url.Values{
		{"redirect_uri": {"http://evil.example/cb"}, "state": {"s"}, "code_challenge_method": {"S256"}},
		{"redirect_uri": {cb.redirectURL}, "state": {"s"}, "code_challenge_method": {"plain"}},
		{"redirect_uri": {cb.redirectURL}, "code_challenge_method": {"S256"}},
	} {
		_, err := cb.fetch(context.Background(), "http://as.example/auth?"+q.Encode(), func(string) error {
			t.Errorf("shown: %v", q)
			return nil
		})
		if err == nil {
			t.Errorf("fetch of %v: no error", q)
		}
	}
}
