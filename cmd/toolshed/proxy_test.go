package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestProxy runs the toolshed proxy binary in front of a scripted model of each wire
// format and talks to it with the Anthropic SDK: the model searches, then calls the
// tool it found; the client gets one response with the search in place. The key goes
// from the environment to the upstream and never into the log.
func TestProxy(t *testing.T) {
	bin := toolshedBinary(t)
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			replies := []fakellm.Reply{
				fakellm.Call("", "toolu_1", "tool_search_tool_regex", `{"pattern":"weather"}`),
				fakellm.Call("", "toolu_2", "get_weather", `{"city":"Paris"}`),
			}
			var model interface{ Requests() []fakellm.Request }
			var up *httptest.Server
			url := ""
			if kind == "openai" {
				m := fakellm.NewOpenAI(replies...)
				model, up = m, httptest.NewServer(m)
				url = up.URL + "/v1"
			} else {
				m := fakellm.NewAnthropic(replies...)
				model, up = m, httptest.NewServer(m)
				url = up.URL
			}
			defer up.Close()

			const key = "sk-test-0123456789abcdef"
			addr, stderr := startProxy(t, bin, []string{"ANTHROPIC_API_KEY=" + key, "OPENAI_API_KEY=" + key},
				"--upstream-url", url, "--upstream-kind", kind)
			client := anthropic.NewClient(option.WithBaseURL("http://"+addr), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
			msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
				Model: "claude-sonnet-4-5", MaxTokens: 512,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
				Tools: []anthropic.ToolUnionParam{
					{OfToolSearchToolRegex20251119: &anthropic.ToolSearchToolRegex20251119Param{Type: "tool_search_tool_regex_20251119"}},
					{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Current weather for a city"),
						InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}, DeferLoading: anthropic.Bool(true)}},
					{OfTool: &anthropic.ToolParam{Name: "send_email", Description: anthropic.String("Send an email"),
						InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"to": map[string]any{"type": "string"}}}, DeferLoading: anthropic.Bool(true)}},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, b := range msg.Content {
				types = append(types, b.Type)
			}
			if got := strings.Join(types, " "); got != "server_tool_use tool_search_tool_result tool_use" || msg.StopReason != "tool_use" {
				t.Errorf("content %q stop %q, want server_tool_use tool_search_tool_result tool_use, stop tool_use", got, msg.StopReason)
			}
			if refs := msg.Content[1].AsToolSearchToolResult().Content.ToolReferences; len(refs) != 1 || refs[0].ToolName != "get_weather" {
				t.Errorf("search found %v, want get_weather", refs)
			}
			reqs := model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			auth := reqs[0].Header.Get("x-api-key") + reqs[0].Header.Get("Authorization")
			if !strings.Contains(auth, key) || strings.Contains(auth, "client-key") {
				t.Errorf("the upstream got credentials %q, want the key from the environment", auth)
			}
			// The child's stderr arrives through a pipe: wait for the request's line.
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "messages request") && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if log := stderr.String(); strings.Contains(log, key) || !strings.Contains(log, "messages request") {
				t.Errorf("the log leaks the key or has no request line:\n%s", log)
			}
		})
	}
}

// startProxy runs toolshed proxy on a free port until the test ends.
func startProxy(t *testing.T, bin string, env []string, args ...string) (string, *testupstream.SyncBuffer) {
	t.Helper()
	addr := freeAddr(t)
	stderr := startCommand(t, bin, env, append([]string{"proxy", "--listen", addr}, args...), func(log string) bool {
		return strings.Contains(log, "Messages API with tool search at")
	})
	return addr, stderr
}

// TestProxyKeyWarning: with no upstream key in its environment, proxy warns at start-up,
// naming the variable it reads for the upstream's kind and saying a client's own key is
// not forwarded, unless the upstream is on this machine (Ollama, vLLM need no key); the
// key and a password in the upstream URL are never printed. It started without a word
// and sent no key at all.
func TestProxyKeyWarning(t *testing.T) {
	bin := toolshedBinary(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // a line of the warning; "" for none
	}{
		{"anthropic, no key", []string{"ANTHROPIC_API_KEY="}, nil,
			"toolshed: warning: $ANTHROPIC_API_KEY is empty, so requests reach https://api.anthropic.com with no API key and it will refuse them; a client's own key (x-api-key or Authorization) is not forwarded. Set ANTHROPIC_API_KEY in the environment toolshed proxy runs in"},
		{"openai, no key", []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=sk-ant-other"}, []string{"--upstream-kind", "openai"},
			"toolshed: warning: $OPENAI_API_KEY is empty, so requests reach https://api.openai.com/v1 with no API key and it will refuse them; a client's own key (x-api-key or Authorization) is not forwarded. Set OPENAI_API_KEY in the environment toolshed proxy runs in"},
		{"remote server, no key", []string{"OPENAI_API_KEY="}, []string{"--upstream-kind", "openai", "--upstream-url", "https://user:pw-secret@llm.example.com/v1"},
			"toolshed: warning: $OPENAI_API_KEY is empty, so requests reach https://user:xxxxx@llm.example.com/v1 with no API key; a client's own key (x-api-key or Authorization) is not forwarded. If the upstream needs a key, set OPENAI_API_KEY in the environment toolshed proxy runs in"},
		{"remote server, key in the query, no key", []string{"OPENAI_API_KEY="}, []string{"--upstream-kind", "openai", "--upstream-url", "https://llm.example.com/v1?api-key=az-secret"},
			"toolshed: warning: $OPENAI_API_KEY is empty, so requests reach https://llm.example.com/v1?api-key=xxxxx with no API key; a client's own key (x-api-key or Authorization) is not forwarded. If the upstream needs a key, set OPENAI_API_KEY in the environment toolshed proxy runs in"},
		{"ollama, no key", []string{"OPENAI_API_KEY="}, []string{"--upstream-kind", "openai", "--upstream-url", "http://127.0.0.1:11434/v1"}, ""},
		{"local anthropic-compatible server, no key", []string{"ANTHROPIC_API_KEY="}, []string{"--upstream-url", "http://localhost:4000"}, ""},
		{"anthropic, key", []string{"ANTHROPIC_API_KEY=sk-ant-secret-key"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr := startProxy(t, bin, tc.env, tc.args...)
			log := stderr.String()
			if tc.want != "" && !strings.Contains(log, tc.want+"\n") {
				t.Errorf("no warning\n%s\nin:\n%s", tc.want, log)
			}
			if tc.want == "" && strings.Contains(log, "warning") {
				t.Errorf("a warning:\n%s", log)
			}
			for _, secret := range []string{"sk-ant-secret-key", "sk-ant-other", "pw-secret", "az-secret"} {
				if strings.Contains(log, secret) {
					t.Errorf("stderr shows %s:\n%s", secret, log)
				}
			}
		})
	}
}
