//go:build e2e && unix

package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/fakellm"
)

// TestClaudeCodeProxyToken drives the real Claude Code through `toolshed proxy --token`:
// with the proxy's token as its key (ANTHROPIC_API_KEY, sent as x-api-key; or
// ANTHROPIC_AUTH_TOKEN, sent as Authorization: Bearer) it is served, and the model gets
// the operator's key, never the token; with another key it is refused with 401 before
// the model is asked, and Claude Code says so.
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeProxyToken -v
func TestClaudeCodeProxyToken(t *testing.T) {
	const token = "toolshed-client-token-e2e"
	const answer = "Hello through a proxy with a token."
	noServers := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(noServers, []byte(`{"mcpServers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		ok   bool
	}{
		{"api key", []string{"ANTHROPIC_API_KEY=" + token}, true},
		{"auth token", []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=" + token}, true},
		{"wrong key", []string{"ANTHROPIC_API_KEY=sk-ant-not-the-token"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakellm.NewAnthropic(fakellm.Say(answer))
			up := httptest.NewServer(model)
			t.Cleanup(up.Close)
			proxyURL, proxyLog := startToolshedProxy(t, "anthropic", up.URL, "--token", token)
			defer func() {
				if t.Failed() {
					t.Logf("toolshed proxy's log:\n%s", proxyLog)
				}
			}()
			res := runClaudeCodeExit(t, !tc.ok, proxyURL, noServers, "Say hello.", tc.env, nil)
			reqs := model.Requests()
			if !tc.ok {
				if !res.IsError || fmt.Sprint(res.APIErrorStatus) != "401" || len(reqs) != 0 {
					t.Errorf("with a wrong key: Claude Code's result %+v, and the model got %d requests; want an error with api_error_status 401 and none", res, len(reqs))
				}
				t.Logf("Claude Code reports: %q", res.Result)
				return
			}
			if res.IsError || res.Result != answer {
				t.Fatalf("Claude Code's result: %+v, want success with %q", res, answer)
			}
			if len(reqs) == 0 {
				t.Fatal("the model got no request")
			}
			for i, r := range reqs {
				if r.Header.Get("x-api-key") != "upstream-key-e2e" || r.Header.Get("Authorization") != "" {
					t.Errorf("model request %d: x-api-key %q, Authorization %q; want the operator's key only", i, r.Header.Get("x-api-key"), r.Header.Get("Authorization"))
				}
				for k, vs := range r.Header {
					if strings.Contains(strings.Join(vs, " "), token) {
						t.Errorf("model request %d: the proxy's token reached the model in %s", i, k)
					}
				}
			}
		})
	}
}
