package messages

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Claude Code's announcements of deferred tools, in its words: a list, a shortened list
// whose rows stand for whole servers, and a list of tools taken away.
func TestAnnounced(t *testing.T) {
	text := func(role, s string) Message { return Message{Role: role, Content: []Block{TextBlock(s)}} }
	msgs := []Message{
		text("user", "Find a tool.\n\nmcp__not__announced"),
		text("system", "# Environment\n - Platform: linux\n\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT loaded. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\nWebFetch\nmcp__github__create_issue\nmcp__github__list_issues\n\nToday's date is 2026-12-07."),
		text("assistant", "The following deferred tools are now available via ToolSearch:\nmcp__said__by_model"),
		text("user", "<system-reminder>\nThe following deferred tools are available via ToolSearch. Their schemas are NOT loaded. This list is shortened to save room: a row such as mcp__claude_ai_Slack__* (42) stands for 42 tools of that server. The tools are:\nmcp__claude_ai_Slack__* (42)\nmcp__linear__get_issue\n</system-reminder>"),
		text("system", "The following tools are no longer available. Do not call them:\nmcp__github__list_issues"),
	}
	names, prefixes := announced(msgs)
	got := slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			yield(n)
		}
	})
	if want := []string{"WebFetch", "mcp__github__create_issue", "mcp__linear__get_issue"}; !slices.Equal(got, want) {
		t.Errorf("announced names %v, want %v", got, want)
	}
	if want := []string{"mcp__claude_ai_Slack__"}; !slices.Equal(prefixes, want) {
		t.Errorf("announced servers %v, want %v", prefixes, want)
	}
}

// FuzzAnnounced checks that any text is read without a panic, and that what it gives
// are tool names and server prefixes.
func FuzzAnnounced(f *testing.F) {
	f.Add("The following deferred tools are now available via ToolSearch:\nWebFetch\nmcp__a__b")
	f.Add("deferred tools are available via ToolSearch\nmcp__x__* (3)\n\nno longer available\nmcp__a__b")
	f.Fuzz(func(t *testing.T, s string) {
		names, prefixes := announced([]Message{{Role: "system", Content: []Block{TextBlock(s)}}})
		for n := range names {
			if !validToolName(n) {
				t.Errorf("announced %q, which is no tool name", n)
			}
		}
		for _, p := range prefixes {
			if !validToolName(p) {
				t.Errorf("announced the server prefix %q", p)
			}
		}
	})
}

// The definitions learned from clients' requests are bounded in bytes: the clients
// shown longest ago are forgotten first, never the one just read.
func TestLearnedDefsBounded(t *testing.T) {
	l := learnedDefs{limit: 10_000}
	desc := strings.Repeat("x", 900)
	for c := range 50 {
		var tools []Tool
		for i := range 5 {
			tools = append(tools, Tool{Name: fmt.Sprintf("mcp__s%d__t%d", c, i), Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		ts := &toolSet{tools: tools, key: [2]uint64{uint64(c), 1}}
		l.learn([16]byte{byte(c)}, ts)
		if l.bytes > l.limit+5*1000 {
			t.Fatalf("after client %d: %d bytes kept, over the bound %d and one client's", c, l.bytes, l.limit)
		}
		if _, ok := l.lookup([16]byte{byte(c)}, fmt.Sprintf("mcp__s%d__t0", c)); !ok {
			t.Fatalf("client %d's definitions, just read, are not kept", c)
		}
	}
	if _, ok := l.lookup([16]byte{0}, "mcp__s0__t0"); ok {
		t.Errorf("the oldest client's definitions are still kept")
	}
	if _, ok := l.lookup([16]byte{1}, "mcp__s0__t0"); ok {
		t.Errorf("a client's lookup found another client's definition")
	}
}

// The indexes of clients' deferred tools are kept within the Proxy's ToolCacheBytes
// and maxClientIndexes; one larger than the budget is built for its search and not
// kept.
func TestClientIndexesBounded(t *testing.T) {
	p := &Proxy{ToolCacheBytes: 200_000}
	search := `{"name":"ToolSearch","description":"Find tools.","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`
	for n := range 40 {
		var tools []string
		for i := range 1 + n%7 {
			tools = append(tools, fmt.Sprintf(`{"name":"mcp__s%d__t%d","description":"%s","input_schema":{"type":"object"},"defer_loading":true}`, n, i, strings.Repeat("word ", 100)))
		}
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[` + search + `,` + strings.Join(tools, ",") + `]}`
		req, err := p.decodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		pr, aerr := p.prepare(req)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if ix, _ := p.clientIndex(pr); ix == nil {
			t.Fatalf("list %d: no index", n)
		}
		c := &p.client.indexes
		if c.bytes > p.ToolCacheBytes || len(c.entries) > maxClientIndexes || len(c.entries) != len(c.order) {
			t.Fatalf("list %d: %d bytes in %d indexes (%d in order), over %d bytes or %d indexes", n, c.bytes, len(c.entries), len(c.order), p.ToolCacheBytes, maxClientIndexes)
		}
	}
	huge := &Proxy{ToolCacheBytes: 1000}
	req, _ := huge.decodeRequest([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[` + search + `,{"name":"mcp__a__b","description":"` + strings.Repeat("word ", 100) + `","input_schema":{"type":"object"},"defer_loading":true}]}`))
	pr, _ := huge.prepare(req)
	if ix, _ := huge.clientIndex(pr); ix == nil || len(huge.client.indexes.entries) != 0 {
		t.Errorf("an index over the whole budget: %v, %d kept", ix != nil, len(huge.client.indexes.entries))
	}
}
