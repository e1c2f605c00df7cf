package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/override"
)

// overrideKeys are the settings of one overrides entry.
const overrideKeys = "servers, tools, keywords, aliases, title, description, show and hide"

// overrides reads overrides: a list of {servers, tools, keywords, aliases, title,
// description, show, hide}. An entry with any problem, an unknown key included, is left
// out entirely rather than applied in part: a half-read rule could show or hide what
// was not meant.
func (l *loader) overrides(n *yaml.Node) []override.Rule {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		l.warn("overrides", "is %s, not a list of entries such as [{tools: \"github__*_issue*\", keywords: [bug, ticket]}]; no override applies", kindName(n))
		return nil
	}
	var out []override.Rule
	for i, item := range n.Content {
		key := fmt.Sprintf("overrides[%d]", i)
		r, problem := l.overrideRule(deref(item), key)
		if problem == "" {
			if err := r.Check(); err != nil {
				problem = strings.TrimPrefix(err.Error(), override.ErrRule.Error()+": ")
			}
		}
		if problem != "" {
			l.warn(key, "%s. This override is left out, so it changes nothing until it is fixed", problem)
			continue
		}
		r.Name = key // its place as written, which the rules left out do not shift
		out = append(out, r)
	}
	return out
}

// overrideRule reads one overrides entry; it returns what is wrong, or "".
func (l *loader) overrideRule(n *yaml.Node, key string) (override.Rule, string) {
	var r override.Rule
	if n.Kind != yaml.MappingNode {
		return r, fmt.Sprintf("is %s, not a mapping such as {tools: \"github__*_issue*\", keywords: [bug, ticket]}", kindName(n))
	}
	for _, p := range l.pairs(n, key) {
		switch p.key {
		case "servers", "tools", "keywords", "aliases":
			list, ok := stringList(p.val)
			if !ok {
				return r, fmt.Sprintf("%s is %s, not a string or a list of strings such as [\"a\", \"b\"]", p.key, kindName(p.val))
			}
			switch p.key {
			case "servers":
				r.Servers = list
			case "tools":
				r.Tools = list
			case "keywords":
				r.Keywords = list
			default:
				r.Aliases = list
			}
		case "title", "description":
			s, ok := text(p.val)
			if !ok {
				return r, fmt.Sprintf("%s is %s, not a string", p.key, kindName(p.val))
			}
			if strings.TrimSpace(s) == "" {
				return r, fmt.Sprintf("%s is empty; give the text, or remove %s", p.key, p.key)
			}
			if p.key == "title" {
				r.Title = s
			} else {
				r.Description = s
			}
		case "show", "hide":
			b, ok := boolOf(p.val)
			if !ok {
				return r, fmt.Sprintf("%s is %s, not true or false", p.key, describe(p.val))
			}
			if p.key == "show" {
				r.Show = b
			} else {
				r.Hide = &b
			}
		default:
			hint := ""
			switch p.key {
			case "server", "tool", "keyword", "alias", "hidden":
				hint = fmt.Sprintf(" (did you mean %s?)", map[string]string{"server": "servers", "tool": "tools", "keyword": "keywords", "alias": "aliases", "hidden": "hide"}[p.key])
			}
			return r, fmt.Sprintf("unknown setting %s%s; an override takes %s", override.Quote(p.key), hint, overrideKeys)
		}
	}
	return r, ""
}
