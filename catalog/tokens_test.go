package catalog_test

import (
	"encoding/json"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/tokens"
)

func TestTokenCounts(t *testing.T) {
	if n := tokens.Count("hello world"); n != 2 {
		t.Fatalf(`tokens.Count("hello world") = %d, want 2 (o200k_base)`, n)
	}
	snap, problems := builtin.Snapshot()
	if len(problems) != 0 {
		t.Fatalf("built-in catalog: %v", problems)
	}
	if snap.Len() < 100 {
		t.Fatalf("built-in catalog has only %d tools", snap.Len())
	}
	checkNames(t, snap)
	perServer := map[string]int{}
	perServerTools := map[string]int{}
	total := 0
	for _, tl := range snap.Tools() {
		def := tl.Definition()
		if !json.Valid(def) {
			t.Fatalf("%s: definition is not JSON: %s", tl.Qualified, def)
		}
		var d struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(def, &d); err != nil || d.Name != tl.Qualified || d.Description != tl.Description {
			t.Errorf("%s: definition %s", tl.Qualified, def)
		}
		n := snap.ToolTokens(tl)
		if want := tokens.Count(string(def)); n != want || n <= 0 {
			t.Errorf("%s: ToolTokens = %d, tokens.Count(Definition) = %d", tl.Qualified, n, want)
		}
		perServer[tl.Server] += n
		perServerTools[tl.Server]++
		total += n
	}
	if snap.Tokens() != total {
		t.Errorf("snapshot Tokens = %d, sum of tools %d", snap.Tokens(), total)
	}
	sum, tools := 0, 0
	for _, s := range snap.Servers() {
		if s.Tokens != perServer[s.Name] || s.Tools != perServerTools[s.Name] {
			t.Errorf("server %s: %d tools %d tokens, want %d and %d", s.Name, s.Tools, s.Tokens, perServerTools[s.Name], perServer[s.Name])
		}
		sum += s.Tokens
		tools += s.Tools
	}
	if sum != total || tools != snap.Len() || len(snap.Servers()) != len(perServer) {
		t.Errorf("servers add up to %d tokens and %d tools, want %d and %d", sum, tools, total, snap.Len())
	}
}

// TestTokenCountsConcurrent asks for counts from many goroutines at once, before anything
// has been counted (run with -race).
func TestTokenCountsConcurrent(t *testing.T) {
	snap := build(t, "s", `{"name": "a", "description": "one two three"}`, `{"name": "b", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}`)
	done := make(chan int)
	for range 8 {
		go func() { done <- snap.Tokens() + snap.ToolTokens(snap.Tool(1)) + snap.Servers()[0].Tokens }()
	}
	want := tokens.Count(string(snap.Tool(0).Definition())) + tokens.Count(string(snap.Tool(1).Definition()))
	for range 8 {
		if got := <-done; got != 2*want+tokens.Count(string(snap.Tool(1).Definition())) {
			t.Errorf("concurrent totals %d", got)
		}
	}
	// An empty catalog costs nothing.
	empty, _ := catalog.Build(nil)
	if empty.Tokens() != 0 || empty.Len() != 0 || len(empty.Servers()) != 0 {
		t.Errorf("empty catalog: %d tokens", empty.Tokens())
	}
}
