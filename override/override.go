// Package override lets an operator fix how tools are found without forking their
// servers: words added to what search indexes for a tool (keywords, aliases), a title or
// description that replaces the server's for search (and, when asked, for what the
// model sees), and tools hidden altogether. Rules select tools by server name or by a
// glob over qualified names, and are applied to the tool lists before a catalog is
// built, so the catalog, its content hash and every index follow them.
//
// A rule that does not ask to show its text changes nothing a model or client sees:
// definitions stay byte for byte what the server sent, and only the index learns the new
// words.
package override

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/jsonscan"
)

// ErrRule is wrapped by the error of a rule Check refuses.
var ErrRule = errors.New("invalid override")

// Rule is one override: which tools it selects and what it changes for them. Rules
// apply in order: keywords and aliases add up, and for title, description and hide the
// last rule that sets one wins, so a broad rule can be refined by a later, narrower one.
type Rule struct {
	// Servers and Tools select the tools: a tool is selected when its server's name
	// matches one of Servers or its qualified name (server__tool) one of Tools. Both
	// are path.Match globs ("github", "github__*_issue*").
	Servers []string
	Tools   []string

	// Keywords are words search finds the tools by, weighted as a title.
	Keywords []string
	// Aliases are other names the tools are found by, weighted as a name.
	Aliases []string
	// Title and Description, when not empty, replace the tools' own for search.
	Title       string
	Description string
	// Show makes Title and Description replace the tools' own in their definitions too:
	// what tools/list, tool_describe and search results show the model. Without it
	// definitions stay exactly as their servers sent them.
	Show bool
	// Hide, when set, hides the tools (true) or brings back tools an earlier rule hid
	// (false). A hidden tool is neither listed, searched, described nor called.
	Hide *bool
}

// Check reports what is wrong with r, or nil: it selects nothing, a glob is
// malformed, it changes nothing, or its settings contradict each other. The error wraps
// ErrRule and says how to fix it.
func (r Rule) Check() error {
	if len(r.Servers) == 0 && len(r.Tools) == 0 {
		return fmt.Errorf("%w: it selects no tools; give servers (server names such as \"github\") or tools (globs over qualified names such as \"github__*_issue*\")", ErrRule)
	}
	for _, list := range [][]string{r.Servers, r.Tools} {
		for _, g := range list {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("%w: an empty pattern selects nothing; remove it or write a glob such as \"github__*\"", ErrRule)
			}
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("%w: %q is not a valid glob (use *, ? and [a-z]): %v", ErrRule, g, err)
			}
		}
	}
	for _, list := range [][]string{r.Keywords, r.Aliases} {
		for _, w := range list {
			if strings.TrimSpace(w) == "" {
				return fmt.Errorf("%w: keywords and aliases cannot be empty; remove the empty one", ErrRule)
			}
		}
	}
	hide := r.Hide != nil && *r.Hide
	changes := len(r.Keywords) > 0 || len(r.Aliases) > 0 || r.Title != "" || r.Description != ""
	switch {
	case hide && (changes || r.Show):
		return fmt.Errorf("%w: hide: true hides the tools from search, so keywords, aliases, title, description and show would do nothing; keep hide alone, or drop it", ErrRule)
	case r.Show && r.Title == "" && r.Description == "":
		return fmt.Errorf("%w: show: true has nothing to show; give the title or description the model should see, or drop show", ErrRule)
	case !changes && r.Hide == nil:
		return fmt.Errorf("%w: it changes nothing; give keywords, aliases, title, description or hide", ErrRule)
	}
	return nil
}

// Selects reports whether r selects the tool of qualified name on server.
func (r Rule) Selects(server, qualified string) bool {
	for _, g := range r.Servers {
		if ok, _ := path.Match(g, server); ok {
			return true
		}
	}
	for _, g := range r.Tools {
		if ok, _ := path.Match(g, qualified); ok {
			return true
		}
	}
	return false
}

// Result is what Apply makes of a catalog's sources.
type Result struct {
	// Sources are the sources with the rules applied: hidden tools removed, search text
	// set (see catalog.Source.Search) and, for rules with Show, definitions rewritten.
	Sources []catalog.Source
	// Hidden holds the hidden tools, by source, exactly as received: a front can tell
	// a call of one from a call of a tool that does not exist.
	Hidden []catalog.Source
	// Selected counts, per rule, the tools it selected. A rule that selects none has
	// a glob that is probably wrong.
	Selected []int
}

// Apply applies rules (each of which Check accepted) to sources, which are not
// modified. Rules that Check refuses must be left out first: Apply does not check them.
func Apply(rules []Rule, sources []catalog.Source) Result {
	res := Result{Selected: make([]int, len(rules))}
	if len(rules) == 0 {
		res.Sources = sources
		return res
	}
	for _, src := range sources {
		server, err := catalog.ServerName(src.Server)
		if err != nil {
			res.Sources = append(res.Sources, src) // Build reports it
			continue
		}
		out := src
		out.Tools = make([]json.RawMessage, 0, len(src.Tools))
		hidden := catalog.Source{Server: src.Server, AlwaysLoad: src.AlwaysLoad, Origin: src.Origin}
		for _, raw := range src.Tools {
			name, ok := toolName(raw)
			if !ok {
				out.Tools = append(out.Tools, raw) // Build reports it
				continue
			}
			e := effectOf(rules, server, catalog.Qualify(server, name), res.Selected)
			if e.hide {
				hidden.Tools = append(hidden.Tools, raw)
				continue
			}
			out.Tools = append(out.Tools, e.rewrite(raw))
			if !e.search.IsZero() {
				if out.Search == nil {
					out.Search = make(map[string]catalog.SearchText, len(src.Search)+1)
					for k, v := range src.Search {
						out.Search[k] = v
					}
				}
				out.Search[name] = e.search
			}
		}
		res.Sources = append(res.Sources, out)
		if len(hidden.Tools) > 0 {
			res.Hidden = append(res.Hidden, hidden)
		}
	}
	return res
}

// effect is what the rules selecting one tool do to it.
type effect struct {
	search catalog.SearchText
	// showTitle and showDesc replace the definition's own, when not empty.
	showTitle, showDesc string
	hide                bool
}

func effectOf(rules []Rule, server, qualified string, selected []int) effect {
	var e effect
	for i, r := range rules {
		if !r.Selects(server, qualified) {
			continue
		}
		selected[i]++
		e.search.Keywords = appendNew(e.search.Keywords, r.Keywords)
		e.search.Aliases = appendNew(e.search.Aliases, r.Aliases)
		if r.Title != "" {
			e.search.Title, e.showTitle = r.Title, ""
			if r.Show {
				e.showTitle = r.Title
			}
		}
		if r.Description != "" {
			e.search.Description, e.showDesc = r.Description, ""
			if r.Show {
				e.showDesc = r.Description
			}
		}
		if r.Hide != nil {
			e.hide = *r.Hide
		}
	}
	return e
}

// rewrite returns raw with the title and description the model is to see, every other
// byte as the server sent it; raw itself when nothing is shown.
func (e effect) rewrite(raw json.RawMessage) json.RawMessage {
	var set []jsonscan.Member
	if e.showTitle != "" {
		set = append(set, jsonscan.Member{Key: "title", Value: quote(e.showTitle)})
	}
	if e.showDesc != "" {
		set = append(set, jsonscan.Member{Key: "description", Value: quote(e.showDesc)})
	}
	if len(set) == 0 {
		return raw
	}
	return jsonscan.SetMembers(raw, set...)
}

// appendNew appends the words of add that list does not have yet.
func appendNew(list, add []string) []string {
	for _, w := range add {
		found := false
		for _, have := range list {
			if have == w {
				found = true
				break
			}
		}
		if !found {
			list = append(list, w)
		}
	}
	return list
}

// toolName reads the "name" of a tool definition, when it is a valid object with a
// string name.
func toolName(raw json.RawMessage) (string, bool) {
	if !json.Valid(raw) {
		return "", false
	}
	var name string
	found := false
	jsonscan.Members(raw, func(k string, v []byte) bool {
		if k == "name" && len(v) > 0 && v[0] == '"' {
			name, found = jsonscan.Unquote(v), true
		}
		return true
	})
	return name, found && name != ""
}

// quote is a JSON string without HTML escaping, as servers write theirs.
func quote(s string) json.RawMessage {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
}
