package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

func TestResolveCall(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		name     string
		args     string
		wantTool string
		wantArgs string
	}{
		{"valid arguments are passed on byte for byte", `{"name": "github__update_issue", "arguments": {"owner": "o",  "repo":"r", "number": 7, "state": "closed"}}`,
			"github__update_issue", `{"owner": "o",  "repo":"r", "number": 7, "state": "closed"}`},
		{"unique bare name", `{"name": "update_issue", "arguments": {"owner": "o", "repo": "r", "number": 7}}`,
			"github__update_issue", `{"owner": "o", "repo": "r", "number": 7}`},
		{"absent arguments are {}", `{"name": "github__list_issues"}`, "github__list_issues", `{}`},
		{"null arguments are {}", `{"name": "github__list_issues", "arguments": null}`, "github__list_issues", `{}`},
		{"arguments as a JSON string of an object", `{"name": "github__close_issue", "arguments": "{\"number\": 3}"}`,
			"github__close_issue", `{"number": 3}`},
		{"the whole call as a JSON string", strconv.Quote(`{"name": "github__close_issue", "arguments": {"number": 3}}`),
			"github__close_issue", `{"number": 3}`},
		{"a tool without inputSchema takes any object", `{"name": "slack__post_message", "arguments": {"anything": [1, 2]}}`,
			"slack__post_message", `{"anything": [1, 2]}`},
		{"a pinned tool can be called through the bridge", `{"name": "core__echo", "arguments": {"text": "hi"}}`,
			"core__echo", `{"text": "hi"}`},
		{"non-ASCII strings pass", `{"name": "weird__describe_me", "arguments": {"zeta": "caf\u00e9", "alpha": 1}}`,
			"weird__describe_me", `{"zeta": "caf\u00e9", "alpha": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, args, r := b.ResolveCall(json.RawMessage(tt.args))
			if r.IsError {
				t.Fatalf("ResolveCall failed: %s", r.Text)
			}
			if r.Code != "" || r.Text != "" || r.Structured != nil {
				t.Errorf("successful resolve returned a result %+v; the front calls the tool instead", r)
			}
			if tool == nil || tool.Qualified != tt.wantTool {
				t.Fatalf("tool = %v, want %s", tool, tt.wantTool)
			}
			if string(args) != tt.wantArgs {
				t.Errorf("arguments = %s, want exactly %s", args, tt.wantArgs)
			}
		})
	}
}

func TestResolveCallErrors(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		name string
		args string
		in   []string // text the message must contain
	}{
		{"absent arguments", ``, []string{"name"}},
		{"missing name", `{"arguments": {}}`, []string{"name"}},
		{"empty name", `{"name": "", "arguments": {}}`, []string{"name"}},
		{"call is an array", `[1]`, []string{"object"}},
		{"call is a number", `5`, []string{"object"}},
		{"calling tool_search through tool_call", `{"name": "tool_search", "arguments": {"query": "x"}}`, []string{"tool_search"}},
		{"calling tool_describe through tool_call", `{"name": "tool_describe", "arguments": {"name": "x"}}`, []string{"tool_describe"}},
		{"calling tool_call through tool_call", `{"name": "tool_call", "arguments": {"name": "x"}}`, []string{"tool_call"}},
		{"bridge name with spaces", `{"name": " tool_call ", "arguments": {}}`, []string{"tool_call"}},
		{"unknown tool", `{"name": "nope__nothing", "arguments": {}}`, []string{"nope__nothing"}},
		{"ambiguous bare name", `{"name": "create_issue", "arguments": {}}`, []string{"github__create_issue", "jira__create_issue"}},
		{"arguments an array", `{"name": "github__list_issues", "arguments": [1]}`, []string{"arguments", "object"}},
		{"arguments a string without an object", `{"name": "github__list_issues", "arguments": "nope"}`, []string{"arguments", "object"}},
		{"arguments a string holding an array", `{"name": "github__list_issues", "arguments": "[1]"}`, []string{"arguments", "object"}},
		{"arguments a number", `{"name": "github__list_issues", "arguments": 5}`, []string{"arguments", "object"}},
		{"arguments a boolean", `{"name": "github__list_issues", "arguments": true}`, []string{"arguments", "object"}},
		{"missing required", `{"name": "github__update_issue", "arguments": {"owner": "o", "repo": "r"}}`,
			[]string{"github__update_issue", "at /:", "number"}},
		{"wrong type", `{"name": "github__update_issue", "arguments": {"owner": "o", "repo": "r", "number": "seven"}}`,
			[]string{"at /number:", "integer"}},
		{"enum violation", `{"name": "github__update_issue", "arguments": {"owner": "o", "repo": "r", "number": 7, "state": "merged"}}`,
			[]string{"at /state:", "open", "closed"}},
		{"additional property", `{"name": "github__update_issue", "arguments": {"owner": "o", "repo": "r", "number": 7, "labels": ["bug"]}}`,
			[]string{"at /:", "labels"}},
		{"every problem is named with its location", `{"name": "github__update_issue", "arguments": {"owner": 1, "number": 7.5, "state": "merged", "extra": true}}`,
			[]string{"at /owner:", "at /number:", "at /state:", "repo", "extra"}},
		{"schema violation inside a string of arguments", `{"name": "github__close_issue", "arguments": "{\"number\": \"x\"}"}`,
			[]string{"at /number:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, args, r := b.ResolveCall(json.RawMessage(tt.args))
			if tool != nil || args != nil {
				t.Errorf("ResolveCall returned tool %v and arguments %s with an error; the tool must not be called", tool, args)
			}
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
func TestResolveCallHiddenToolLooksAbsent(t *testing.T) {
	b := newTestBridge(t)
	for _, tt := range []struct{ hidden, nonex string }{
		{"secret__obliterate_everything", "secret__obliterate_everythinx"},
		{"obliterate_everything", "obliterate_everythinx"},
		{"secret__list_issues", "secret__list_issuex"},
	} {
		t.Run(tt.hidden, func(t *testing.T) {
			call := func(name string) bridge.Result {
				tool, _, r := b.ResolveCall(json.RawMessage(mustJSON(map[string]any{"name": name, "arguments": map[string]any{}})))
				if tool != nil {
					t.Fatalf("ResolveCall(%s) returned a tool", name)
				}
				checkError(t, r, search.InvalidToolInput)
				return r
			}
			hidden, absent := call(tt.hidden), call(tt.nonex)
			if a, n, same := sameModuloName(hidden.Text, tt.hidden, absent.Text, tt.nonex); !same {
				t.Errorf("hidden tool: %q\nunknown tool: %q", a, n)
			}
		})
	}
}

// schemaBridge is a session with one deferred tool, t__x, of the given input schema.
func schemaBridge(t *testing.T, schema string) *bridge.Bridge {
	t.Helper()
	doc := fmt.Sprintf(`{"servers": [{"name": "t", "tools": [{"name": "x", "inputSchema": %s}]}]}`, schema)
	return newBridge(t, doc, policy.Input{Config: testConfig()})
}

// An input schema with a $ref outside itself is never resolved: toolshed reads no file
// and fetches no URL for it. Such a schema cannot be checked here, so the arguments go
// to the server unchecked and the server has the last word.
func TestResolveCallExternalRefIsNeverLoadedAndArgumentsPassUnchecked(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type": "string"}`) // would reject every object
	}))
	defer srv.Close()
	// A local schema that would reject every object, were it read.
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + filepath.ToSlash(file)

	tests := []struct {
		name   string
		schema string
	}{
		{"https $ref at the root", `{"type": "object", "$ref": "https://example.com/s.json"}`},
		{"relative $ref", `{"type": "object", "$ref": "definitions.json"}`},
		{"relative $ref with a fragment", `{"type": "object", "properties": {"a": {"$ref": "defs.json#/a"}}}`},
		{"file:///etc/passwd $ref", `{"type": "object", "$ref": "file:///etc/passwd"}`},
		{"$ref to a local file", `{"type": "object", "$ref": ` + strconv.Quote(fileURL) + `}`},
		{"$ref to a live server", `{"type": "object", "$ref": ` + strconv.Quote(srv.URL+"/s.json") + `}`},
		{"nested $ref to a live server", `{"type": "object", "properties": {"a": {"$ref": ` + strconv.Quote(srv.URL+"/a.json") + `}}}`},
		{"$schema pointing at a live server", `{"$schema": ` + strconv.Quote(srv.URL+"/meta.json") + `, "type": "object", "properties": {"a": {"type": "string"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := schemaBridge(t, tt.schema)
			want := `{"a": 1}`
			tool, args, r := b.ResolveCall(json.RawMessage(`{"name": "t__x", "arguments": ` + want + `}`))
			if r.IsError || tool == nil {
				t.Fatalf("ResolveCall failed: %s", r.Text)
			}
			if string(args) != want {
				t.Errorf("arguments = %s, want %s", args, want)
			}
			// The same through CheckArguments, twice (the second from the schema cache).
			for range 2 {
				if _, err := bridge.CheckArguments(tool, json.RawMessage(want)); err != nil {
					t.Errorf("CheckArguments = %v, want the arguments unchecked", err)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server was asked %d times; toolshed must fetch nothing", n)
	}
}

func TestResolveCallDraft07Schema(t *testing.T) {
	// dependencies, definitions, tuple items and numeric exclusiveMinimum are draft-07;
	// under the default draft (2020-12) "dependencies" would be ignored.
	b := schemaBridge(t, `{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {
			"a": {"type": "integer"},
			"b": {"type": "string"},
			"t": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
			"n": {"$ref": "#/definitions/positive"}
		},
		"dependencies": {"a": ["b"]},
		"definitions": {"positive": {"type": "integer", "exclusiveMinimum": 0}}
	}`)
	tests := []struct {
		args   string
		wantIn []string // empty: valid
	}{
		{`{"a": 1, "b": "x", "t": ["s", 2], "n": 1}`, nil},
		{`{}`, nil},
		{`{"b": "x"}`, nil},
		{`{"a": 1}`, []string{"at /:", "b"}},
		{`{"t": [1]}`, []string{"at /t/0:"}},
		{`{"t": ["s", "s"]}`, []string{"at /t/1:"}},
		{`{"n": 0}`, []string{"at /n:"}},
		{`{"n": "x"}`, []string{"at /n:"}},
		{`{"a": 1, "n": 0}`, []string{"at /:", "at /n:"}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			tool, args, r := b.ResolveCall(json.RawMessage(`{"name": "t__x", "arguments": ` + tt.args + `}`))
			if len(tt.wantIn) == 0 {
				if r.IsError || tool == nil || string(args) != tt.args {
					t.Fatalf("ResolveCall = %v, %s, %q; want the tool and %s", tool, args, r.Text, tt.args)
				}
				return
			}
			if tool != nil {
				t.Errorf("invalid arguments returned the tool")
			}
			checkError(t, r, search.InvalidToolInput)
			for _, s := range tt.wantIn {
				if !strings.Contains(r.Text, s) {
					t.Errorf("message %q does not mention %q", r.Text, s)
				}
			}
		})
	}
}

func TestDecodeArguments(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{``, `{}`, false},
		{`null`, `{}`, false},
		{`  null `, `{}`, false},
		{`{}`, `{}`, false},
		{` {"a": 1} `, `{"a": 1}`, false},
		{`"{\"a\": 1}"`, `{"a": 1}`, false},
		{`" {\"a\": 1} "`, `{"a": 1}`, false},
		{`[1]`, ``, true},
		{`"nope"`, ``, true},
		{`""`, ``, true},
		{`"[1]"`, ``, true},
		{`"{bad"`, ``, true},
		{`5`, ``, true},
		{`true`, ``, true},
		{`{"a": }`, ``, true},
		{`{"a": 1}x`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := bridge.DecodeArguments(json.RawMessage(tt.in))
			if tt.wantErr {
				if !errors.Is(err, bridge.ErrArguments) || got != nil {
					t.Fatalf("DecodeArguments(%s) = %s, %v; want an error wrapping ErrArguments", tt.in, got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("DecodeArguments(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCheckArguments(t *testing.T) {
	b := newTestBridge(t)
	tool, err := b.Plan.Lookup("github__update_issue")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    string
		wantErr bool
	}{
		{`{"owner": "o", "repo": "r", "number": 1}`, false},
		{`"{\"owner\": \"o\", \"repo\": \"r\", \"number\": 1}"`, false},
		{`{"owner": "o", "repo": "r"}`, true},
		{`{"owner": "o", "repo": "r", "number": 1, "x": 0}`, true},
		{`[]`, true},
		{``, true}, // {} lacks the required members
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := bridge.CheckArguments(tool, json.RawMessage(tt.args))
			if tt.wantErr != (err != nil) {
				t.Fatalf("CheckArguments(%s) = %v, want error %t", tt.args, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, bridge.ErrArguments) {
				t.Errorf("error %v does not wrap ErrArguments", err)
			}
			if vErr := bridge.ValidateArguments(tool, json.RawMessage(`{"owner": "o", "repo": "r", "number": 1}`)); vErr != nil {
				t.Errorf("ValidateArguments of valid arguments = %v", vErr)
			}
		})
	}
}

// tool_call refuses the bridge tools by name, even when an upstream server has a tool of
// that bare name (which stays callable by its qualified name), and says why rather than
// claiming the tool does not exist.
func TestResolveCallRefusesBridgeTools(t *testing.T) {
	b := newBridge(t, `{"servers": [{"name": "up", "tools": [{"name": "tool_call"}, {"name": "tool_search"}]}]}`, policy.Input{Config: testConfig()})
	for _, name := range []string{bridge.SearchTool, bridge.DescribeTool, bridge.CallTool} {
		t.Run(name, func(t *testing.T) {
			tool, _, r := b.ResolveCall(json.RawMessage(mustJSON(map[string]any{"name": name, "arguments": map[string]any{}})))
			if tool != nil {
				t.Fatalf("tool_call resolved the bridge tool %s to %s", name, tool.Qualified)
			}
			checkError(t, r, search.InvalidToolInput)
			_, _, unknown := b.ResolveCall(json.RawMessage(`{"name": "zz_unknown", "arguments": {}}`))
			if _, _, same := sameModuloName(r.Text, name, unknown.Text, "zz_unknown"); same {
				t.Errorf("calling %s through tool_call reports an unknown tool (%q); it should say it is a bridge tool", name, r.Text)
			}
		})
	}
	tool, _, r := b.ResolveCall(json.RawMessage(`{"name": "up__tool_call", "arguments": {}}`))
	if tool == nil || tool.Qualified != "up__tool_call" {
		t.Errorf("up__tool_call by its qualified name = %v, %q; want the upstream tool", tool, r.Text)
	}
}
