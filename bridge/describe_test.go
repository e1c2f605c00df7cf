package bridge_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

func compact(t *testing.T, raw string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.String()
}

func TestDescribe(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		name, args string
		want       bridge.Description
	}{
		{
			name: "unusual bytes are kept exactly",
			args: `{"name": "weird__describe_me"}`,
			want: bridge.Description{Name: "weird__describe_me", Server: "weird", Title: "Weird é", Description: "A tool with unusual schema bytes.",
				InputSchema: json.RawMessage(weirdInput), OutputSchema: json.RawMessage(weirdOutput), Annotations: json.RawMessage(weirdAnnotations)},
		},
		{
			name: "unique bare name",
			args: `{"name": "describe_me"}`,
			want: bridge.Description{Name: "weird__describe_me", Server: "weird", Title: "Weird é", Description: "A tool with unusual schema bytes.",
				InputSchema: json.RawMessage(weirdInput), OutputSchema: json.RawMessage(weirdOutput), Annotations: json.RawMessage(weirdAnnotations)},
		},
		{
			name: "name with surrounding space",
			args: `{"name": " jira__create_issue "}`,
			want: bridge.Description{Name: "jira__create_issue", Server: "jira", Description: "Create a Jira issue in a project.",
				InputSchema: json.RawMessage(`{"type": "object", "properties": {"project": {"type": "string"}, "summary": {"type": "string"}}, "required": ["project", "summary"]}`)},
		},
		{
			name: "a tool without inputSchema describes an empty object schema",
			args: `{"name": "slack__post_message"}`,
			want: bridge.Description{Name: "slack__post_message", Server: "slack", Description: "Post a message to a Slack channel.",
				InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		{
			name: "a pinned tool can be described too",
			args: `{"name": "core__echo"}`,
			want: bridge.Description{Name: "core__echo", Server: "core", Description: "Echo the text back.",
				InputSchema: json.RawMessage(`{"type": "object", "properties": {"text": {"type": "string"}}}`)},
		},
		{
			name: "arguments as a JSON string holding the object",
			args: `"{\"name\": \"core__echo\"}"`,
			want: bridge.Description{Name: "core__echo", Server: "core", Description: "Echo the text back.",
				InputSchema: json.RawMessage(`{"type": "object", "properties": {"text": {"type": "string"}}}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Describe(json.RawMessage(tt.args))
			if r.IsError {
				t.Fatalf("Describe failed: %s", r.Text)
			}
			got, ok := r.Structured.(bridge.Description)
			if !ok {
				t.Fatalf("Structured is %T, want bridge.Description", r.Structured)
			}
			// Byte for byte: key order, spacing and \u escapes as the server sent them.
			for _, f := range []struct {
				field     string
				got, want json.RawMessage
			}{
				{"inputSchema", got.InputSchema, tt.want.InputSchema},
				{"outputSchema", got.OutputSchema, tt.want.OutputSchema},
				{"annotations", got.Annotations, tt.want.Annotations},
			} {
				if !bytes.Equal(f.got, f.want) {
					t.Errorf("%s = %s, want exactly %s", f.field, f.got, f.want)
				}
			}
			if got.Name != tt.want.Name || got.Server != tt.want.Server || got.Title != tt.want.Title || got.Description != tt.want.Description {
				t.Errorf("description = %+v, want %+v", got, tt.want)
			}

			// The text carries the same schemas, compacted but otherwise unchanged.
			var text map[string]json.RawMessage
			if err := json.Unmarshal([]byte(r.Text), &text); err != nil {
				t.Fatalf("Text is not a JSON object: %v\n%s", err, r.Text)
			}
			for field, want := range map[string]json.RawMessage{"inputSchema": tt.want.InputSchema, "outputSchema": tt.want.OutputSchema, "annotations": tt.want.Annotations} {
				if len(want) == 0 {
					if _, present := text[field]; present {
						t.Errorf("text has %s, which the tool does not", field)
					}
					continue
				}
				if got, want := string(text[field]), compact(t, string(want)); got != want {
					t.Errorf("text %s = %s, want %s", field, got, want)
				}
			}
			var name string
			if err := json.Unmarshal(text["name"], &name); err != nil || name != tt.want.Name {
				t.Errorf("text name = %s, want %q", text["name"], tt.want.Name)
			}
		})
	}
}

func TestDescribeKeepsEscapesInText(t *testing.T) {
	b := newTestBridge(t)
	r := b.Describe(json.RawMessage(`{"name": "weird__describe_me"}`))
	for _, s := range []string{`caf\u00e9 \u2014 <b>bold</b> & more`, `"zeta":{"type":"string"`, `"Weird \u00e9"`, `"zzz":1,"aaa":2`, `"x-order":[3,1,2]`} {
		if !strings.Contains(r.Text, s) {
			t.Errorf("text does not hold %s as sent: %s", s, r.Text)
		}
	}
}

func TestDescribeErrors(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		name, args string
		in         []string
	}{
		{"absent arguments", ``, []string{"name"}},
		{"empty object", `{}`, []string{"name"}},
		{"empty name", `{"name": ""}`, []string{"name"}},
		{"blank name", `{"name": "  "}`, []string{"name"}},
		{"name not a string", `{"name": 3}`, []string{"tool_describe"}},
		{"array arguments", `[1]`, []string{"object"}},
		{"string arguments", `"x"`, []string{"object"}},
		{"number arguments", `42`, []string{"object"}},
		{"unknown tool", `{"name": "nope__nothing"}`, []string{"nope__nothing", "tool_search"}},
		{"ambiguous bare name lists the qualified names", `{"name": "create_issue"}`, []string{"github__create_issue", "jira__create_issue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Describe(json.RawMessage(tt.args))
			checkError(t, r, search.InvalidToolInput)
			for _, s := range tt.in {
				if !strings.Contains(r.Text, s) {
					t.Errorf("message %q does not mention %q", r.Text, s)
				}
			}
		})
	}
}

// A tool the session may not use must look exactly like one that does not exist.
func TestDescribeHiddenToolLooksAbsent(t *testing.T) {
	b := newTestBridge(t)
	rules := map[string]policy.ServerRules{}
	if err := json.Unmarshal([]byte(`{"jira": {"configs": {"create_issue": {"enabled": false}}}}`), &rules); err != nil {
		t.Fatal(err)
	}
	disabled := newBridge(t, testCatalog, policy.Input{Config: testConfig(), Servers: rules})
	tests := []struct {
		name          string
		b             *bridge.Bridge
		hidden, nonex string
	}{
		{"out of scope, qualified", b, "secret__obliterate_everything", "secret__obliterate_everythinx"},
		{"out of scope, bare", b, "obliterate_everything", "obliterate_everythinx"},
		{"disabled by config", disabled, "jira__create_issue", "jira__create_issux"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hidden := tt.b.Describe(json.RawMessage(mustJSON(map[string]string{"name": tt.hidden})))
			absent := tt.b.Describe(json.RawMessage(mustJSON(map[string]string{"name": tt.nonex})))
			checkError(t, hidden, search.InvalidToolInput)
			checkError(t, absent, search.InvalidToolInput)
			if a, n, same := sameModuloName(hidden.Text, tt.hidden, absent.Text, tt.nonex); !same {
				t.Errorf("hidden tool: %q\nunknown tool: %q", a, n)
			}
		})
	}
	// Hiding a tool leaves no ambiguity behind: jira's create_issue is disabled, so the
	// bare name is github's.
	r := disabled.Describe(json.RawMessage(`{"name": "create_issue"}`))
	if d, ok := r.Structured.(bridge.Description); !ok || d.Name != "github__create_issue" {
		t.Errorf("bare create_issue with jira's disabled = %s, want github__create_issue", r.Text)
	}
}
