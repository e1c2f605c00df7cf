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
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/jsonscan"
)

// ErrRule is wrapped by the error of a rule Check refuses.
var ErrRule = errors.New("invalid override")

// Rule is one override: which tools it selects and what it changes for them. Rules
// apply in order: keywords and aliases add up, and for title, description and hide the
// last rule that sets one wins, so a broad rule can be refined by a later, narrower one.
type Rule struct {
	// Name is how messages name the rule: where it is in the config as written
	// ("overrides[7]"), which its place among the rules applied is not once rules with
	// problems are left out. Empty: messages name it by that place.
	Name string

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

// Bounds of one rule, which Check enforces: every rule is matched against every tool at
// each assembly, and its words are indexed for every tool it selects, so a rule past
// them (a generated list of a million keywords, a 100 KB glob) would hold up the
// gateway's start for minutes rather than help search. Real rules are far below them.
const (
	// MaxPatterns bounds a rule's servers and tools together.
	MaxPatterns = 1000
	// MaxPatternLen bounds one glob, in bytes.
	MaxPatternLen = 512
	// MaxWords bounds a rule's keywords and aliases together.
	MaxWords = 1000
	// MaxWordLen bounds one keyword or alias, in bytes.
	MaxWordLen = 256
	// MaxTextLen bounds a rule's title and description, in bytes each.
	MaxTextLen = 16 << 10
)

// Check reports what is wrong with r, or nil: it selects nothing, a glob is
// malformed, it changes nothing, its settings contradict each other, or it is over one
// of the bounds above. The error wraps ErrRule and says how to fix it.
func (r Rule) Check() error {
	if len(r.Servers) == 0 && len(r.Tools) == 0 {
		return fmt.Errorf("%w: it selects no tools; give servers (server names such as \"github\") or tools (globs over qualified names such as \"github__*_issue*\")", ErrRule)
	}
	if n := len(r.Servers) + len(r.Tools); n > MaxPatterns {
		return fmt.Errorf("%w: it has %d servers and tools patterns, more than the %d a rule may have; use broader globs, or split it into several rules", ErrRule, n, MaxPatterns)
	}
	for _, list := range [][]string{r.Servers, r.Tools} {
		for _, g := range list {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("%w: an empty pattern selects nothing; remove it or write a glob such as \"github__*\"", ErrRule)
			}
			if len(g) > MaxPatternLen {
				return fmt.Errorf("%w: the pattern %s is %d bytes long, more than the %d a pattern may have; write a shorter glob", ErrRule, Quote(g), len(g), MaxPatternLen)
			}
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("%w: %s is not a valid glob (use *, ? and [a-z]): %v", ErrRule, Quote(g), err)
			}
		}
	}
	if n := len(r.Keywords) + len(r.Aliases); n > MaxWords {
		return fmt.Errorf("%w: it has %d keywords and aliases, more than the %d a rule may have; keep the words people search with, or split the tools over several rules", ErrRule, n, MaxWords)
	}
	for _, list := range [][]string{r.Keywords, r.Aliases} {
		for _, w := range list {
			if strings.TrimSpace(w) == "" {
				return fmt.Errorf("%w: keywords and aliases cannot be empty; remove the empty one", ErrRule)
			}
			if len(w) > MaxWordLen {
				return fmt.Errorf("%w: the keyword or alias %s is %d bytes long, more than the %d one may have; use shorter words", ErrRule, Quote(w), len(w), MaxWordLen)
			}
		}
	}
	for _, f := range []struct{ key, text string }{{"title", r.Title}, {"description", r.Description}} {
		if len(f.text) > MaxTextLen {
			return fmt.Errorf("%w: its %s is %d bytes long, more than the %d it may have; shorten it", ErrRule, f.key, len(f.text), MaxTextLen)
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
	// Each rule's words without repeats, once, rather than for every tool it selects.
	words := make([]ruleWords, len(rules))
	for i, r := range rules {
		words[i] = ruleWords{keywords: distinct(r.Keywords), aliases: distinct(r.Aliases)}
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
			e := effectOf(rules, words, server, catalog.Qualify(server, name), res.Selected)
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

// ruleWords are a rule's keywords and aliases, each without repeats.
type ruleWords struct{ keywords, aliases []string }

func effectOf(rules []Rule, words []ruleWords, server, qualified string, selected []int) effect {
	var e effect
	for i, r := range rules {
		if !r.Selects(server, qualified) {
			continue
		}
		selected[i]++
		e.search.Keywords = merge(e.search.Keywords, words[i].keywords)
		e.search.Aliases = merge(e.search.Aliases, words[i].aliases)
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

// distinct returns the words of list without repeats, in the order they first come,
// in time linear in their number.
func distinct(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(list))
	out := make([]string, 0, len(list))
	for _, w := range list {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// merge returns list (words without repeats) followed by the words of add (the same)
// that list does not have, in time linear in their numbers. It shares add when list is
// empty, the common case of a tool one rule selects: the result is never appended to
// in place (see slices.Clip).
func merge(list, add []string) []string {
	switch {
	case len(add) == 0:
		return list
	case len(list) == 0:
		return slices.Clip(add)
	}
	seen := make(map[string]bool, len(list))
	for _, w := range list {
		seen[w] = true
	}
	out := slices.Clip(list)
	for _, w := range add {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
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

// quoteMax bounds, in bytes, what Quote shows of a string.
const quoteMax = 80

// Quote is how a message shows a string from a config (a glob, a keyword, a setting's
// name): quoted, with control characters and invalid UTF-8 escaped, so that a NUL byte or
// a terminal escape is seen rather than sent to the terminal, and, past quoteMax bytes,
// cut at a character's start and followed by its length, so that a 100 KB glob does not
// flood the log.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	n := quoteMax
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:n]), len(s))
}
