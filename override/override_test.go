package override_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/override"
	"github.com/toolshed/toolshed/search"
)

func ptr[T any](v T) *T { return &v }

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule override.Rule
		want string // a part of the error; "" for none
	}{
		{"keywords by tool glob", override.Rule{Tools: []string{"github__*_issue*"}, Keywords: []string{"bug"}}, ""},
		{"hide by server", override.Rule{Servers: []string{"slack"}, Hide: ptr(true)}, ""},
		{"unhide", override.Rule{Tools: []string{"slack__post"}, Hide: ptr(false)}, ""},
		{"shown description", override.Rule{Tools: []string{"a__b"}, Description: "d", Show: true}, ""},
		{"selects nothing", override.Rule{Keywords: []string{"bug"}}, "selects no tools"},
		{"empty glob", override.Rule{Tools: []string{" "}, Keywords: []string{"bug"}}, "empty pattern"},
		{"malformed glob", override.Rule{Tools: []string{"github__[a"}, Keywords: []string{"bug"}}, "not a valid glob"},
		{"malformed server glob", override.Rule{Servers: []string{"["}, Hide: ptr(true)}, "not a valid glob"},
		{"empty keyword", override.Rule{Tools: []string{"a__*"}, Keywords: []string{""}}, "cannot be empty"},
		{"empty alias", override.Rule{Tools: []string{"a__*"}, Aliases: []string{"x", " "}}, "cannot be empty"},
		{"changes nothing", override.Rule{Tools: []string{"a__*"}}, "changes nothing"},
		{"show alone", override.Rule{Tools: []string{"a__*"}, Keywords: []string{"k"}, Show: true}, "nothing to show"},
		{"hide with keywords", override.Rule{Tools: []string{"a__*"}, Keywords: []string{"k"}, Hide: ptr(true)}, "keep hide alone"},
		{"words at the bound", override.Rule{Tools: []string{"a__*"}, Keywords: words(override.MaxWords - 1), Aliases: []string{"x"}}, ""},
		{"too many words", override.Rule{Tools: []string{"a__*"}, Keywords: words(override.MaxWords), Aliases: []string{"x"}}, "has 1001 keywords and aliases, more than the 1000"},
		{"a million keywords", override.Rule{Tools: []string{"a__*"}, Keywords: words(1_000_000)}, "has 1000000 keywords"},
		{"word too long", override.Rule{Tools: []string{"a__*"}, Keywords: []string{strings.Repeat("w", override.MaxWordLen+1)}}, "is 257 bytes long"},
		{"too many patterns", override.Rule{Tools: words(override.MaxPatterns + 1), Hide: ptr(true)}, "has 1001 servers and tools patterns"},
		{"glob too long", override.Rule{Tools: []string{strings.Repeat("*a", 50<<10)}, Hide: ptr(true)}, `the pattern "*a*a`},
		{"title too long", override.Rule{Tools: []string{"a__*"}, Title: strings.Repeat("t", override.MaxTextLen+1)}, "its title is 16385 bytes long"},
		{"malformed glob with a NUL", override.Rule{Tools: []string{"a\x00["}, Hide: ptr(true)}, `"a\x00[" is not a valid glob`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, override.ErrRule)):
				t.Errorf("Check = %v, want an ErrRule saying %q", err, tc.want)
			}
		})
	}
}

// words returns n distinct words.
func words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", i)
	}
	return out
}

// Quote shows a string from a config safely in a message: quoted, control bytes
// escaped, and cut short past 80 bytes with its length.
func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"github__*", `"github__*"`},
		{"a\x00b\x1b[2J", `"a\x00b\x1b[2J"`},
		{strings.Repeat("x", 80), `"` + strings.Repeat("x", 80) + `"`},
		{strings.Repeat("x", 100<<10), `"` + strings.Repeat("x", 80) + `"… (102400 bytes)`},
		// Cut at a character's start.
		{strings.Repeat("x", 79) + "é" + strings.Repeat("x", 10), `"` + strings.Repeat("x", 79) + `"… (91 bytes)`},
	} {
		if got := override.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q...) = %.120s, want %.120s", tc.in, got, tc.want)
		}
	}
}

// Keywords and aliases repeated within a rule and across rules are indexed once, in
// the order they first come.
func TestApplyDistinctWords(t *testing.T) {
	rules := []override.Rule{
		{Servers: []string{"s"}, Keywords: []string{"a", "b", "a", "c", "b"}, Aliases: []string{"x", "x"}},
		{Tools: []string{"s__one"}, Keywords: []string{"c", "d", "a", "d"}, Aliases: []string{"y", "x"}},
	}
	src := catalog.Source{Server: "s", Tools: []json.RawMessage{json.RawMessage(`{"name":"one","inputSchema":{"type":"object"}}`), json.RawMessage(`{"name":"two","inputSchema":{"type":"object"}}`)}}
	res := override.Apply(rules, []catalog.Source{src})
	want := map[string]catalog.SearchText{
		"one": {Keywords: []string{"a", "b", "c", "d"}, Aliases: []string{"x", "y"}},
		"two": {Keywords: []string{"a", "b", "c"}, Aliases: []string{"x"}},
	}
	if got := res.Sources[0].Search; !reflect.DeepEqual(got, want) {
		t.Errorf("search text = %+v, want %+v", got, want)
	}
}

// BenchmarkApplyKeywords applies one rule with as many keywords as a rule may have, and
// one with ten thousand (past the bound, which Apply does not check), to a hundred
// tools: linear in the keywords (10,000 took 3.6 s when each was compared with every
// other).
func BenchmarkApplyKeywords(b *testing.B) {
	var tools []json.RawMessage
	for i := range 100 {
		tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i)))
	}
	src := []catalog.Source{{Server: "s", Tools: tools}}
	for _, n := range []int{override.MaxWords, 10_000} {
		rules := []override.Rule{
			{Servers: []string{"s"}, Keywords: words(n)},
			{Tools: []string{"s__t1*"}, Keywords: words(n / 2)},
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				override.Apply(rules, src)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	for _, tc := range []struct {
		rule              override.Rule
		server, qualified string
		want              bool
	}{
		{override.Rule{Servers: []string{"github"}}, "github", "github__create_issue", true},
		{override.Rule{Servers: []string{"git*"}}, "gitlab", "gitlab__x", true},
		{override.Rule{Servers: []string{"github"}}, "gitlab", "gitlab__x", false},
		{override.Rule{Tools: []string{"github__*_issue*"}}, "github", "github__create_issue", true},
		{override.Rule{Tools: []string{"github__*_issue*"}}, "github", "github__list_issues", true},
		{override.Rule{Tools: []string{"github__*_issue*"}}, "github", "github__create_pull_request", false},
		{override.Rule{Tools: []string{"*__search"}}, "a", "a__search", true},
		// A glob over the bare name selects nothing: names are qualified.
		{override.Rule{Tools: []string{"create_issue"}}, "github", "github__create_issue", false},
		{override.Rule{Servers: []string{"slack"}, Tools: []string{"github__get_me"}}, "github", "github__get_me", true},
	} {
		if got := tc.rule.Selects(tc.server, tc.qualified); got != tc.want {
			t.Errorf("%+v.Selects(%s, %s) = %v, want %v", tc.rule, tc.server, tc.qualified, got, tc.want)
		}
	}
}

var sources = []catalog.Source{
	{Server: "github", Origin: "test", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "create_issue", "description": "Create an issue.",  "inputSchema": {"type": "object"}, "x-own": [1, 2]}`),
		json.RawMessage(`{"name": "list_issues", "title": "List", "description": "List issues.", "inputSchema": {"type": "object"}}`),
		json.RawMessage(`{"name": "delete_repo", "description": "Delete a repository.", "inputSchema": {"type": "object"}}`),
	}},
	{Server: "slack", Origin: "test", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "post_message", "description": "Post a message.", "inputSchema": {"type": "object"}}`),
	}},
}

func TestApply(t *testing.T) {
	rules := []override.Rule{
		{Tools: []string{"github__*_issue*"}, Keywords: []string{"bug", "ticket"}},
		{Tools: []string{"github__create_issue"}, Keywords: []string{"ticket", "file"}, Aliases: []string{"open_ticket"}, Description: "Open a ticket.", Show: true},
		{Tools: []string{"github__list_issues"}, Title: "Issue list"},
		{Servers: []string{"github"}, Hide: ptr(true)},
		{Tools: []string{"github__*_issue*"}, Hide: ptr(false)},
		{Tools: []string{"nothing__*"}, Keywords: []string{"never"}},
	}
	res := override.Apply(rules, sources)
	if want := []int{2, 1, 1, 3, 2, 0}; !reflect.DeepEqual(res.Selected, want) {
		t.Errorf("Selected = %v, want %v", res.Selected, want)
	}
	if len(res.Hidden) != 1 || len(res.Hidden[0].Tools) != 1 || string(res.Hidden[0].Tools[0]) != string(sources[0].Tools[2]) {
		t.Fatalf("Hidden = %+v, want delete_repo as received", res.Hidden)
	}
	gh := res.Sources[0]
	if len(gh.Tools) != 2 {
		t.Fatalf("github keeps %d tools, want 2", len(gh.Tools))
	}
	// show rewrites the description, every other byte as received.
	if want := `{"name": "create_issue", "description": "Open a ticket.",  "inputSchema": {"type": "object"}, "x-own": [1, 2]}`; string(gh.Tools[0]) != want {
		t.Errorf("shown definition =\n%s\nwant\n%s", gh.Tools[0], want)
	}
	// Without show the definition is byte for byte the server's.
	if string(gh.Tools[1]) != string(sources[0].Tools[1]) {
		t.Errorf("definition without show changed: %s", gh.Tools[1])
	}
	if string(res.Sources[1].Tools[0]) != string(sources[1].Tools[0]) || res.Sources[1].Search != nil {
		t.Errorf("an unselected tool changed: %s %v", res.Sources[1].Tools[0], res.Sources[1].Search)
	}
	want := map[string]catalog.SearchText{
		"create_issue": {Description: "Open a ticket.", Keywords: []string{"bug", "ticket", "file"}, Aliases: []string{"open_ticket"}},
		"list_issues":  {Title: "Issue list", Keywords: []string{"bug", "ticket"}},
	}
	if !reflect.DeepEqual(gh.Search, want) {
		t.Errorf("Search = %+v\nwant %+v", gh.Search, want)
	}
	if sources[0].Search != nil || len(sources[0].Tools) != 3 {
		t.Errorf("Apply modified its input")
	}
}

// What Apply sets is what search finds, and a rule's words change the catalog's hash, so
// an index cached for the catalog without them is not reused.
func TestApplySearched(t *testing.T) {
	plain, _ := catalog.Build(sources)
	res := override.Apply([]override.Rule{
		{Tools: []string{"slack__post_message"}, Keywords: []string{"announce"}},
		{Tools: []string{"github__delete_repo"}, Aliases: []string{"nuke"}},
		{Tools: []string{"github__list_issues"}, Description: "Enumerate the backlog."},
	}, sources)
	snap, problems := catalog.Build(res.Sources)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if snap.Hash() == plain.Hash() {
		t.Errorf("overrides left the hash unchanged")
	}
	for _, tc := range []struct{ query, want string }{
		{"announce", "slack__post_message"},
		{"nuke", "github__delete_repo"},
		{"backlog", "github__list_issues"},
	} {
		for _, s := range []*catalog.Snapshot{plain, snap} {
			got, err := search.NewIndex(s).Search(tc.query, search.Options{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			found := len(got) > 0 && got[0].Tool.Qualified == tc.want
			if found != (s == snap) {
				t.Errorf("%q finds %v in the catalog with overrides %v", tc.query, got, s == snap)
			}
		}
		re, err := search.NewIndex(snap).Regex(tc.query, search.Options{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if tc.query == "backlog" && (len(re) == 0 || re[0].Tool.Qualified != tc.want) {
			t.Errorf("regex %q = %v, want the search-only description searched", tc.query, re)
		}
	}
	// The definitions a model sees are the server's.
	if tool, _ := snap.Lookup("github__list_issues", nil); tool.Description != "List issues." || tool.SearchDescription() != "Enumerate the backlog." {
		t.Errorf("description %q, searched %q", tool.Description, tool.SearchDescription())
	}
}
