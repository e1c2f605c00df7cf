package messages_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

const helloBody = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`

// send posts body to the proxy at url with headers ("Host" sets the request's host)
// and decodes the Messages API error it may get.
func send(t *testing.T, method, url string, headers map[string]string, body string) (int, string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(testupstream.Request(t, method, url, headers, strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode != http.StatusOK && e.Error.Type == "" {
		t.Errorf("%s %s = %d %q: not a Messages API error", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Error.Type, e.Error.Message
}

// TestFrontDoor: what a web page can send (a cross-site POST, a rebound Host, a
// text/plain body) is refused before anything reaches the upstream, in the API's error
// format; what real clients send passes.
func TestFrontDoor(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"), fakellm.Say("hi"), fakellm.Say("hi"))
	srv := httptest.NewServer(h.proxy.Handler()) // on 127.0.0.1
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	jsonCT := map[string]string{"Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"Content-Type": "application/json"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		typ     string
		says    string
	}{
		// The request: curl -X POST 127.0.0.1:8787/v1/messages -H 'Content-Type:
		// text/plain' -H 'Origin: http://evil.example' -H 'Host: evil.example'.
		{"issue 16", "/v1/messages", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Host": "evil.example"}, 403, "permission_error", `invalid Host header "evil.example"`},
		{"rebound host", "/v1/messages", with("Host", "evil.example:"+port), 403, "permission_error", "DNS rebinding"},
		{"cross-site", "/v1/messages", with("Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"), 403, "permission_error", `origin "http://evil.example" is not allowed`},
		{"foreign origin", "/v1/messages/count_tokens", with("Origin", "http://evil.example"), 403, "permission_error", "--allow-origin"},
		{"text/plain", "/v1/messages", map[string]string{"Content-Type": "text/plain"}, 415, "invalid_request_error", "Content-Type: application/json"},
		{"form", "/v1/messages/count_tokens", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "invalid_request_error", "application/json"},
		{"no content type", "/v1/messages", map[string]string{}, 415, "invalid_request_error", "application/json"},
		{"json", "/v1/messages", jsonCT, 200, "", ""},
		{"json with charset", "/v1/messages", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, "", ""},
		{"localhost", "/v1/messages", with("Host", "localhost:"+port), 200, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.model.Requests())
			status, typ, msg := send(t, http.MethodPost, srv.URL+tc.path, tc.headers, helloBody)
			if status != tc.status || typ != tc.typ || !strings.Contains(msg, tc.says) {
				t.Errorf("POST %s with %v = %d %s %q, want %d %s %q", tc.path, tc.headers, status, typ, msg, tc.status, tc.typ, tc.says)
			}
			if reached := len(h.model.Requests()) - before; (tc.status == 200) != (reached == 1) {
				t.Errorf("the upstream got %d requests", reached)
			}
		})
	}

	// Liveness, with no key and no body.
	h.proxy.ClientKey = "T"
	keyed := httptest.NewServer(h.proxy.Handler())
	defer keyed.Close()
	resp, err := http.Get(keyed.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"status":"ok"}` {
		t.Errorf("GET /healthz = %d %q, want 200 {\"status\":\"ok\"}", resp.StatusCode, b)
	}
	if status, _, _ := send(t, http.MethodGet, keyed.URL+"/healthz", map[string]string{"Host": "evil.example"}, ""); status != 403 {
		t.Errorf("GET /healthz with Host evil.example = %d, want 403", status)
	}
}

// TestFrontDoorAllowed: the hosts and origins allowed by the operator pass.
func TestFrontDoorAllowed(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"), fakellm.Say("hi"))
	h.proxy.AllowHosts = []string{"proxy.internal"}
	h.proxy.AllowOrigins = []string{"https://app.example"}
	srv := httptest.NewServer(h.proxy.Handler())
	defer srv.Close()
	for _, headers := range []map[string]string{
		{"Content-Type": "application/json", "Host": "proxy.internal"},
		{"Content-Type": "application/json", "Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"},
	} {
		if status, typ, msg := send(t, http.MethodPost, srv.URL+"/v1/messages", headers, helloBody); status != 200 {
			t.Errorf("POST with %v = %d %s %q, want 200", headers, status, typ, msg)
		}
	}
}

// TestClientKeyWays: the proxy's key is accepted as x-api-key (ANTHROPIC_API_KEY) and
// as a bearer token in any case (ANTHROPIC_AUTH_TOKEN, OpenAI-style clients); the
// upstream gets the operator's key and never the client's.
func TestClientKeyWays(t *testing.T) {
	h := newHarness(t)
	h.proxy.ClientKey = "toolshed-T"
	srv := httptest.NewServer(h.proxy.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"x-api-key", map[string]string{"x-api-key": "toolshed-T"}, true},
		{"Bearer", map[string]string{"Authorization": "Bearer toolshed-T"}, true},
		{"bearer", map[string]string{"Authorization": "bearer toolshed-T"}, true},
		{"another key and the bearer", map[string]string{"x-api-key": "sk-ant-other", "Authorization": "Bearer toolshed-T"}, true},
		{"wrong x-api-key", map[string]string{"x-api-key": "toolshed-t"}, false},
		{"wrong bearer", map[string]string{"Authorization": "Bearer toolshed-TT"}, false},
		{"basic", map[string]string{"Authorization": "Basic toolshed-T"}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.model = fakellm.NewAnthropic(fakellm.Say("hi"))
			h.upstream.next = h.model
			headers := map[string]string{"Content-Type": "application/json"}
			for k, v := range tc.headers {
				headers[k] = v
			}
			status, typ, _ := send(t, http.MethodPost, srv.URL+"/v1/messages", headers, helloBody)
			reqs := h.model.Requests()
			if !tc.ok {
				if status != 401 || typ != "authentication_error" || len(reqs) != 0 {
					t.Errorf("%v = %d %s with %d upstream requests, want 401 authentication_error and none", tc.headers, status, typ, len(reqs))
				}
				return
			}
			if status != 200 || len(reqs) != 1 {
				t.Fatalf("%v = %d %s with %d upstream requests, want 200", tc.headers, status, typ, len(reqs))
			}
			up := reqs[0].Header
			if up.Get("x-api-key") != "upstream-key" || up.Get("Authorization") != "" {
				t.Errorf("the upstream got x-api-key %q, Authorization %q; want the operator's key only", up.Get("x-api-key"), up.Get("Authorization"))
			}
			for k, vs := range up {
				if strings.Contains(strings.Join(vs, " "), "toolshed-T") || strings.Contains(strings.Join(vs, " "), "sk-ant-other") {
					t.Errorf("the client's key reached the upstream in %s", k)
				}
			}
		})
	}

	// The Anthropic SDK's two ways.
	for _, opt := range []option.RequestOption{option.WithAPIKey("toolshed-T"), option.WithAuthToken("toolshed-T")} {
		h.model = fakellm.NewAnthropic(fakellm.Say("hi"))
		h.upstream.next = h.model
		client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithMaxRetries(0), opt)
		if _, err := client.Messages.New(context.Background(), params("bm25", ask("hi"))); err != nil {
			t.Errorf("the Anthropic SDK with the proxy's key: %v", err)
		}
	}
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithMaxRetries(0), option.WithAuthToken("nope"))
	_, err := client.Messages.New(context.Background(), params("bm25", ask("hi")))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Errorf("the Anthropic SDK with a wrong token: %v, want 401", err)
	}
}
