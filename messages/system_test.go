package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
)

// Claude Code 2.1.332 puts "role": "system" messages inside messages with its default
// model and with any model name that is not a known Claude model (a local model behind
// the OpenAI upstream, say): its environment notes after the first user message, where
// they are also the last message of the first request, and later reminders. Its first
// one has a list of text blocks; sent back in later requests, a string.
const (
	ccEnv       = `{"role":"system","content":[{"type":"text","text":"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/user/project\n - Platform: linux"}]}`
	ccEnvString = `{"role":"system","content":"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/user/project\n - Platform: linux"}`
	ccReminder  = `{"role":"system","content":"The following deferred tools are now available via ToolSearch: mcp__everything__echo"}`
)

// messagesOf returns the elements of a JSON body's messages array, as bytes.
func messagesOf(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var b struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return b.Messages
}

// TestSystemMessages checks "role": "system" messages inside messages: an Anthropic
// upstream gets them as they are, byte for byte and in place; the OpenAI upstream gets
// each as a system message in place, the order kept.
func TestSystemMessages(t *testing.T) {
	cases := []struct {
		name    string
		msgs    []string
		replies []fakellm.Reply
		shape   []string
		// roles are the roles of the Chat Completions messages the OpenAI upstream
		// gets, and systems the texts of its system messages.
		roles   []string
		systems []string
	}{{
		name:    "system-last",
		msgs:    []string{ccAsk, ccEnv},
		replies: []fakellm.Reply{fakellm.Say("Hello.")},
		shape:   []string{"text"},
		roles:   []string{"user", "system"},
		systems: []string{"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/user/project\n - Platform: linux"},
	}, {
		// Sent back with the search that followed, and a reminder in the middle.
		name:    "system-in-conversation",
		msgs:    []string{ccAsk, ccEnvString, ccSearch, ccFound, ccReminder},
		replies: []fakellm.Reply{fakellm.Call("", "toolu_02", "mcp__memory__create_entities", `{"entities":[]}`)},
		shape:   []string{"tool_use(mcp__memory__create_entities)"},
		roles:   []string{"user", "system", "assistant", "tool", "user", "system"},
		systems: []string{
			"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/user/project\n - Platform: linux",
			"The following deferred tools are now available via ToolSearch: mcp__everything__echo",
		},
	}}
	for _, c := range cases {
		eachUpstream(t, c.name, func(t *testing.T, kind string, stream bool, name string) {
			h, _ := sendCC(t, kind, stream, c.msgs, c.replies, c.shape)
			sent := h.model.Requests()[0].Body
			if kind == "anthropic" {
				// Every message the proxy does not act on, the system ones
				// among them, goes as it came.
				got := messagesOf(t, sent)
				if len(got) != len(c.msgs) {
					t.Fatalf("the upstream got %d messages, want %d:\n%s", len(got), len(c.msgs), sent)
				}
				for i, m := range c.msgs {
					if strings.Contains(m, `"role":"system"`) && !bytes.Equal(got[i], []byte(m)) {
						t.Errorf("message %d:\n got %s\nwant %s", i, got[i], m)
					}
				}
			} else {
				var body struct {
					Messages []struct {
						Role    string `json:"role"`
						Content any    `json:"content"`
					} `json:"messages"`
				}
				json.Unmarshal(sent, &body)
				var roles, systems []string
				for _, m := range body.Messages {
					roles = append(roles, m.Role)
					if m.Role == "system" {
						systems = append(systems, fmt.Sprint(m.Content))
					}
				}
				if !equal(roles, c.roles) || !equal(systems, c.systems) {
					t.Errorf("Chat Completions messages:\n got roles %q systems %q\nwant roles %q systems %q", roles, systems, c.roles, c.systems)
				}
			}
			checkExchange(t, name, h)
		})
	}
}

// TestSystemMessagesCountTokens checks that count_tokens takes system messages too.
func TestSystemMessagesCountTokens(t *testing.T) {
	for _, kind := range []string{"anthropic", "openai"} {
		h := newHarnessFor(t, kind)
		body := []byte(`{"model":"claude-opus-5-5","messages":[` + ccAsk + `,` + ccEnv + `],"tools":` + ccTools + `}`)
		n, err := h.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{}, option.WithRequestBody("application/json", body))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if n.InputTokens <= 0 {
			t.Errorf("%s: input_tokens %d", kind, n.InputTokens)
		}
	}
}

// TestUnknownRole checks that a role other than user, assistant and system is a 400
// that says which roles there are, and reaches no model.
func TestUnknownRole(t *testing.T) {
	for _, role := range []string{"developer", "tool", "User", ""} {
		for _, kind := range []string{"anthropic", "openai"} {
			h := newHarnessFor(t, kind)
			body := ccBody(false, ccTools, ccAsk, `{"role":"`+role+`","content":"x"}`)
			_, err := h.sendRaw(t, false, body)
			var ae *anthropic.Error
			if !errors.As(err, &ae) {
				t.Fatalf("role %q %s: got %v, want an API error", role, kind, err)
			}
			want := fmt.Sprintf(`messages.1.role: %q is not a role of the Messages API; use "user", "assistant" or "system"`, role)
			if ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || ae.Message != want {
				t.Errorf("role %q %s: got %d %s %q, want 400 invalid_request_error %q", role, kind, ae.StatusCode, ae.Type(), ae.Message, want)
			}
			if n := len(h.model.Requests()); n != 0 {
				t.Errorf("role %q %s: the request reached the model", role, kind)
			}
		}
	}
}
