package catalog_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// subsetSources are three servers, two of which share a bare tool name, one pinned and
// one with an override of what search indexes.
func subsetSources() []catalog.Source {
	github := source("github",
		`{"name": "create_issue", "description": "Create an issue.", "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}`,
		`{"name": "search", "description": "Search code."}`,
		`{"name": "list_pulls", "description": "List pull requests."}`)
	github.Search = map[string]catalog.SearchText{"list_pulls": {Keywords: []string{"PRs"}}}
	slack := source("slack",
		`{"name": "search", "description": "Search messages."}`,
		`{"name": "post", "description": "Post a message."}`)
	slack.AlwaysLoad = true
	memory := source("memory", `{"name": "read_graph", "description": "Read the knowledge graph."}`)
	return []catalog.Source{github, slack, memory}
}

// only returns sources with the tools keep admits, by server and bare name.
func only(sources []catalog.Source, keep func(server, tool string) bool) []catalog.Source {
	var out []catalog.Source
	for _, src := range sources {
		kept := src
		kept.Tools = nil
		for _, raw := range src.Tools {
			var tool struct{ Name string }
			json.Unmarshal(raw, &tool)
			if keep(src.Server, tool.Name) {
				kept.Tools = append(kept.Tools, raw)
			}
		}
		if len(kept.Tools) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

// A subset is the catalog Build makes of just its tools (the tools, their order and
// indexes, the servers, the token figures and the hash), so that nothing derived from
// it depends on the tools left out; the catalog it is taken from does not change.
func TestSubset(t *testing.T) {
	sources := subsetSources()
	tests := []struct {
		name string
		keep func(server, tool string) bool
	}{
		{"one server", func(server, _ string) bool { return server == "slack" }},
		{"two servers", func(server, _ string) bool { return server != "memory" }},
		{"tools of two servers", func(server, tool string) bool { return tool == "search" || server == "memory" }},
		{"one tool", func(_, tool string) bool { return tool == "list_pulls" }},
		{"no tool", func(string, string) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full, problems := catalog.Build(sources)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			fullBefore := qualifiedNames(full)
			sub := full.Subset(func(tool *catalog.Tool) bool { return tt.keep(tool.Server, tool.Name) })
			want, problems := catalog.Build(only(sources, tt.keep))
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if sub.Hash() != want.Hash() {
				t.Errorf("hash %s, want Build's %s", sub.Hash(), want.Hash())
			}
			if sub.Tokens() != want.Tokens() || !reflect.DeepEqual(sub.Servers(), want.Servers()) {
				t.Errorf("tokens %d and servers %+v, want %d and %+v", sub.Tokens(), sub.Servers(), want.Tokens(), want.Servers())
			}
			for _, tool := range want.Tools() {
				want.ToolTokens(tool)
			}
			if !reflect.DeepEqual(sub.Tools(), want.Tools()) {
				t.Errorf("tools %v, want %v", qualifiedNames(sub), qualifiedNames(want))
			}
			for i, tool := range full.Tools() {
				if tool.Index != i || full.Tool(i) != tool {
					t.Fatalf("the subset changed the full catalog's tool %s", tool.Qualified)
				}
			}
			if got := qualifiedNames(full); !reflect.DeepEqual(got, fullBefore) || full.Len() != 6 {
				t.Errorf("the full catalog now has %v", got)
			}
		})
	}
}

// Looking a name up in a subset is looking it up in a catalog of its tools alone: a
// bare name that two servers share in the full catalog is no longer ambiguous when one
// is left out, and a tool left out is unknown, with the error of a name no tool has.
func TestSubsetLookup(t *testing.T) {
	full, _ := catalog.Build(subsetSources())
	if _, err := full.Lookup("search", nil); !errors.Is(err, catalog.ErrAmbiguous) {
		t.Fatalf("search in the full catalog: %v, want ambiguous", err)
	}
	sub := full.Subset(func(tool *catalog.Tool) bool { return tool.Server == "slack" })
	if tool, err := sub.Lookup("search", nil); err != nil || tool.Qualified != "slack__search" || tool.Index != 0 || sub.Tool(0) != tool {
		t.Errorf("search in the subset: %v, %v", tool, err)
	}
	_, missing := sub.Lookup("github__create_issue", nil)
	_, never := sub.Lookup("github__no_such_tool", nil)
	if !errors.Is(missing, catalog.ErrUnknownTool) || strings.ReplaceAll(missing.Error(), "create_issue", "no_such_tool") != never.Error() {
		t.Errorf("a tool left out gives %v; a name no tool has gives %v", missing, never)
	}
	if full.Subset(func(*catalog.Tool) bool { return true }) != full {
		t.Error("a subset of every tool is not the catalog itself")
	}
}
