package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/messages"
)

// ccHeaders are the headers Claude Code 2.1.332 sends with each request (captured),
// and some a client might add: a cookie, a bearer token, and a header its Connection
// header names (hop-by-hop, so the proxy's own).
var ccHeaders = [][2]string{
	{"Accept", "application/json"},
	{"Content-Type", "application/json"},
	{"User-Agent", "claude-cli/2.1.332 (external, sdk-cli)"},
	{"X-Claude-Code-Session-Id", "93b7e80e-0f8e-4b85-829c-e77b17f53c5f"},
	{"X-Stainless-Arch", "x64"},
	{"X-Stainless-Lang", "js"},
	{"X-Stainless-Os", "Linux"},
	{"X-Stainless-Package-Version", "0.128.0"},
	{"X-Stainless-Retry-Count", "0"},
	{"X-Stainless-Runtime", "node"},
	{"X-Stainless-Runtime-Version", "v26.12.1"},
	{"X-Stainless-Timeout", "600"},
	{"Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24"},
	{"Anthropic-Dangerous-Direct-Browser-Access", "true"},
	{"Anthropic-Version", "2023-06-01"},
	{"X-Api-Key", "sk-ant-client-000"},
	{"X-App", "cli"},
	{"Connection", "keep-alive, X-Hop"},
	{"X-Hop", "for the proxy only"},
	{"Accept-Encoding", "gzip, deflate, br, zstd"},
	{"Authorization", "Bearer client-token"},
	{"Cookie", "session=client-secret"},
}

// forwarded are the headers of ccHeaders an Anthropic upstream must get as they came.
var forwarded = []string{"Accept", "User-Agent", "X-Claude-Code-Session-Id", "X-Stainless-Arch", "X-Stainless-Lang",
	"X-Stainless-Os", "X-Stainless-Package-Version", "X-Stainless-Retry-Count", "X-Stainless-Runtime",
	"X-Stainless-Runtime-Version", "X-Stainless-Timeout", "Anthropic-Beta", "Anthropic-Dangerous-Direct-Browser-Access",
	"Anthropic-Version", "X-App"}

// ccMembers are members of Claude Code's request that toolshed does not act on, as it
// sends them, and a member no version of the API has yet. Their bytes, spaces and key
// order included, must reach an Anthropic upstream unchanged.
const ccMembers = `"system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.27e; cc_entrypoint=sdk-cli;"}, {"type": "text", "text": "You are a Claude agent. Tools print <functions> & more.", "cache_control": {"type": "ephemeral"}}],
 "metadata": {"user_id": "{\"device_id\":\"1c9ebbbc412b09168a60abf7953c7d5f27e886dc6992c24095e84881a9d3a47e\",\"account_uuid\":\"\",\"session_id\":\"93b7e80e-0f8e-4b85-829c-e77b17f53c5f\"}"},
 "thinking": {"type": "adaptive", "display": "omitted"},
 "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
 "output_config": {"effort": "medium"},
 "future_member": {"b": 2, "a": [1.50, 2e3]}`

// passthroughBody is a request in Claude Code's shape with ccMembers; count_tokens
// requests have no max_tokens and stream.
func passthroughBody(countTokens, stream bool) []byte {
	b := `{"model": "claude-opus-5-5", "messages": [` + ccAsk + `, ` + ccEnv + `], ` + ccMembers + `, "tools": ` + ccTools
	if !countTokens {
		b += `, "max_tokens": 128000`
	}
	if stream {
		b += `, "stream": true`
	}
	return []byte(b + "}")
}

// postRaw posts body with ccHeaders to the proxy at url + path, and returns the status
// and the response body.
func postRaw(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range ccHeaders {
		req.Header.Add(kv[0], kv[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// members decodes the members of a JSON object with their bytes.
func members(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

// TestPassThroughAnthropic checks that what toolshed does not act on reaches an
// Anthropic upstream untouched: the query string, every header but the client's
// credentials and the hop-by-hop and transport ones (the upstream key replaces the
// client's), and every body member with its bytes, for messages (streamed or not) and
// count_tokens. The upstream's bodies are kept in testdata/passthrough as they came.
func TestPassThroughAnthropic(t *testing.T) {
	cases := []struct {
		name                string
		path                string
		countTokens, stream bool
		reply               fakellm.Reply
	}{
		{"messages", "/v1/messages?beta=true", false, false, fakellm.Say("Hello.")},
		{"messages-stream", "/v1/messages?beta=true", false, true, fakellm.Say("Hello.")},
		{"count_tokens", "/v1/messages/count_tokens?beta=true", true, false, fakellm.Reply{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.reply)
			front := httptest.NewServer(h.proxy.Handler())
			defer front.Close()
			body := passthroughBody(c.countTokens, c.stream)
			status, resp := postRaw(t, front.URL+c.path, body)
			if status != 200 {
				t.Fatalf("%d %s", status, resp)
			}
			got := h.model.Requests()
			if len(got) != 1 {
				t.Fatalf("the upstream got %d requests, want 1", len(got))
			}
			up := got[0]
			if wantPath, wantQuery, _ := strings.Cut(c.path, "?"); up.Path != wantPath || up.RawQuery != wantQuery {
				t.Errorf("upstream URL %s?%s, want %s", up.Path, up.RawQuery, c.path)
			}
			for _, k := range forwarded {
				if want := headerValues(k); !slices.Equal(up.Header.Values(k), want) {
					t.Errorf("header %s: upstream got %q, want %q", k, up.Header.Values(k), want)
				}
			}
			if got := up.Header.Values("X-Api-Key"); !slices.Equal(got, []string{"upstream-key"}) {
				t.Errorf("x-api-key %q, want only the proxy's upstream key", got)
			}
			// The client may take brotli; toolshed reads the answer, and Go's client
			// asks for gzip only, which it decompresses.
			if got := up.Header.Get("Accept-Encoding"); got != "gzip" {
				t.Errorf("accept-encoding %q, want Go's own gzip", got)
			}
			for _, k := range []string{"Authorization", "Cookie", "X-Hop"} {
				if v := up.Header.Values(k); len(v) > 0 {
					t.Errorf("header %s reached the upstream: %q", k, v)
				}
			}
			for k, vs := range up.Header {
				for _, v := range vs {
					for _, secret := range []string{"sk-ant-client-000", "client-token", "client-secret"} {
						if strings.Contains(v, secret) {
							t.Errorf("a client credential reached the upstream: %s: %s", k, v)
						}
					}
				}
			}
			// The members toolshed does not act on, byte for byte.
			sent, sentUp := members(t, body), members(t, up.Body)
			for _, k := range []string{"system", "metadata", "thinking", "context_management", "output_config", "future_member", "model"} {
				if !bytes.Equal(sentUp[k], sent[k]) {
					t.Errorf("member %s:\n got %s\nwant %s", k, sentUp[k], sent[k])
				}
			}
			golden.Check(t, filepath.Join("testdata", "passthrough", "anthropic-"+c.name+".json"), append(up.Body, '\n'))
		})
	}
}

func headerValues(k string) []string {
	var out []string
	for _, kv := range ccHeaders {
		if http.CanonicalHeaderKey(kv[0]) == k {
			out = append(out, kv[1])
		}
	}
	return out
}

// TestPassThroughOpenAI checks that the same request through the OpenAI upstream is
// answered: what maps to Chat Completions is mapped (see ToOpenAI), the rest dropped,
// and none of the client's headers sent.
func TestPassThroughOpenAI(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarnessFor(t, "openai", fakellm.Say("Hello."))
		front := httptest.NewServer(h.proxy.Handler())
		defer front.Close()
		status, resp := postRaw(t, front.URL+"/v1/messages?beta=true", passthroughBody(false, stream))
		if status != 200 {
			t.Fatalf("stream=%v: %d %s", stream, status, resp)
		}
		up := h.model.Requests()[0]
		for k := range up.Header {
			if k != "Content-Type" && k != "Accept" && k != "Authorization" && k != "User-Agent" && k != "Content-Length" && k != "Accept-Encoding" {
				t.Errorf("stream=%v: header %s sent to the OpenAI upstream", stream, k)
			}
		}
		if ua := up.Header.Get("User-Agent"); strings.Contains(ua, "claude-cli") {
			t.Errorf("stream=%v: the client's User-Agent went to the OpenAI upstream", stream)
		}
		name := "openai-messages"
		if stream {
			name += "-stream"
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, up.Body, "", "  ")
		golden.Check(t, filepath.Join("testdata", "passthrough", name+".json"), append(pretty.Bytes(), '\n'))
	}
}

// TestCountTokensLibraryMembers checks Proxy.CountTokens called with a request made for
// /v1/messages, as a library user might: only the members count_tokens takes go to an
// Anthropic upstream, which rejects the others.
func TestCountTokensLibraryMembers(t *testing.T) {
	h := newHarness(t)
	var req messages.Request
	body := `{"model":"m","max_tokens":10,"temperature":0.5,"top_k":3,"stop_sequences":["x"],"thinking":{"type":"disabled"},"output_format":{"type":"json_schema","schema":{"type":"object"}},"messages":[{"role":"user","content":"hi"}]}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if _, err := h.proxy.CountTokens(context.Background(), &req, http.Header{}); err != nil {
		t.Fatal(err)
	}
	got := members(t, h.model.Requests()[0].Body)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"messages", "model", "output_format", "thinking"}; !slices.Equal(keys, want) {
		t.Errorf("count_tokens members %v, want %v", keys, want)
	}
}
