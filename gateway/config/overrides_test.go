package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/override"
)

func TestOverrides(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	tests := []struct {
		name, src string
		want      []override.Rule
		key       string
		warn      []string
	}{
		{"keywords by glob", `[{tools: "github__*_issue*", keywords: [bug, ticket], aliases: open_ticket}]`,
			[]override.Rule{{Name: "overrides[0]", Tools: []string{"github__*_issue*"}, Keywords: []string{"bug", "ticket"}, Aliases: []string{"open_ticket"}}}, "", nil},
		{"shown text", `[{tools: [a__b, a__c], title: T, description: "Does d.", show: yes}]`,
			[]override.Rule{{Name: "overrides[0]", Tools: []string{"a__b", "a__c"}, Title: "T", Description: "Does d.", Show: true}}, "", nil},
		{"hide and unhide", `[{servers: slack, hide: true}, {tools: slack__read*, hide: false}]`,
			[]override.Rule{{Name: "overrides[0]", Servers: []string{"slack"}, Hide: yes}, {Name: "overrides[1]", Tools: []string{"slack__read*"}, Hide: no}}, "", nil},
		{"null", `null`, nil, "", nil},
		{"not a list", `{tools: x}`, nil, "overrides", []string{"is a mapping, not a list", "no override applies"}},
		{"entry not a mapping", `[x, {tools: a__b, hide: true}]`, []override.Rule{{Name: "overrides[1]", Tools: []string{"a__b"}, Hide: yes}}, "overrides[0]", []string{"not a mapping", "left out"}},
		{"unknown key leaves the entry out", `[{tools: a__b, kewords: [x], hide: true}]`, nil, "overrides[0]", []string{`unknown setting "kewords"`, "an override takes servers, tools, keywords", "left out"}},
		{"singular key", `[{tool: a__b, hide: true}]`, nil, "overrides[0]", []string{`did you mean tools?`}},
		{"bad glob", `[{tools: "a__[", hide: true}]`, nil, "overrides[0]", []string{`"a__[" is not a valid glob`, "left out"}},
		{"selects nothing", `[{keywords: [x]}]`, nil, "overrides[0]", []string{"selects no tools", "give servers"}},
		{"changes nothing", `[{tools: a__b}]`, nil, "overrides[0]", []string{"changes nothing"}},
		{"show without text", `[{tools: a__b, keywords: [k], show: true}]`, nil, "overrides[0]", []string{"nothing to show"}},
		{"hide with words", `[{tools: a__b, keywords: [k], hide: true}]`, nil, "overrides[0]", []string{"keep hide alone"}},
		{"hide not a bool", `[{tools: a__b, hide: maybe}]`, nil, "overrides[0]", []string{`hide is "maybe", not true or false`}},
		{"description not a string", `[{tools: a__b, description: 5}]`, nil, "overrides[0]", []string{"description is the number 5, not a string"}},
		{"empty title", `[{tools: a__b, title: ""}]`, nil, "overrides[0]", []string{"title is empty"}},
		{"keywords not strings", `[{tools: a__b, keywords: {a: 1}}]`, nil, "overrides[0]", []string{"keywords is a mapping, not a string or a list"}},
		{"too many keywords", `[{tools: a__b, keywords: [` + strings.Repeat("k,", override.MaxWords) + `k]}]`, nil, "overrides[0]", []string{"has 1001 keywords and aliases, more than the 1000", "left out"}},
		{"a key with a NUL, long", `[{tools: a__b, hide: true, "k\0` + strings.Repeat("x", 200) + `": 1}]`, nil, "overrides[0]", []string{`unknown setting "k\x00xxx`, "… (202 bytes)"}},
		// The rules kept are named by their place in the file, not among those kept.
		{"named as written", `[{tools: "a__[", hide: true}, {tools: a__b, title: ""}, {tools: a__c, hide: true}]`,
			[]override.Rule{{Name: "overrides[2]", Tools: []string{"a__c"}, Hide: yes}}, "overrides[1]", []string{"title is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "overrides: "+tt.src+"\n")
			if !reflect.DeepEqual(cfg.Overrides, tt.want) {
				t.Errorf("overrides = %#v\nwant        %#v", cfg.Overrides, tt.want)
			}
			if tt.key == "" {
				wantNoWarnings(t, warns)
			} else {
				wantWarning(t, warns, tt.key, tt.warn...)
			}
		})
	}
}

// The mcpServers JSON of a client takes overrides too, comments and all.
func TestOverridesJSON(t *testing.T) {
	cfg, warns, err := Parse([]byte(`{
  "mcpServers": {"github": {"command": "github-mcp"}},
  // toolshed's own
  "overrides": [{"tools": "github__*_issue*", "keywords": ["bug"], "description": "Issues.", "show": true},],
}`), "mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	wantNoWarnings(t, warns)
	want := []override.Rule{{Name: "overrides[0]", Tools: []string{"github__*_issue*"}, Keywords: []string{"bug"}, Description: "Issues.", Show: true}}
	if !reflect.DeepEqual(cfg.Overrides, want) {
		t.Errorf("overrides = %#v, want %#v", cfg.Overrides, want)
	}
}
