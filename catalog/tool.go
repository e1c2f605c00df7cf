// Package catalog holds the tools toolshed knows about: every definition exactly as its
// server listed it, under a qualified name that every major client accepts, with its token
// cost. A catalog is an immutable Snapshot with a content hash, rebuilt from the live tool
// lists at every assembly, so it can never drift from what the servers really offer.
package catalog

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/toolshed/toolshed/tokens"
)

// Separator joins a server name and a tool name into a qualified name.
const Separator = "__"

// MaxNameLen is the longest name the major clients accept (Anthropic, OpenAI, Gemini,
// Claude Desktop, Cursor): ^[a-zA-Z0-9_-]{1,128}$.
const MaxNameLen = 128

// Tool is one tool of one server. The raw JSON fields are byte-for-byte what the server
// sent; the decoded fields exist for search and display only and never go back out.
type Tool struct {
	// Server is the name of the server that offers the tool.
	Server string
	// Name is the tool's own name, exactly as its server lists it.
	Name string
	// Qualified is Server + "__" + Name, with characters clients reject replaced by '_'
	// and shortened with a hash suffix when longer than MaxNameLen.
	Qualified string

	// Title is the tool's human title (its "title", else annotations.title).
	Title string
	// Description is the tool's description.
	Description string
	// Params lists the parameters of the input schema, nested object properties included,
	// in schema order.
	Params []Param
	// Required lists the names of the top-level required parameters, in schema order.
	Required []string

	// InputSchema is the "inputSchema" value as received.
	InputSchema json.RawMessage
	// OutputSchema is the "outputSchema" value as received, or nil.
	OutputSchema json.RawMessage
	// Annotations is the "annotations" value as received, or nil.
	Annotations json.RawMessage
	// Meta is the "_meta" value as received, or nil.
	Meta json.RawMessage
	// Raw is the whole definition as received.
	Raw json.RawMessage

	// Search is what an operator's override changes in what search indexes for the tool
	// (see Source.Search). Nothing but search reads it: it never reaches a model.
	Search SearchText

	// Pinned reports that the tool must never be deferred: its server is marked
	// alwaysLoad, or its _meta carries "anthropic/alwaysLoad": true.
	Pinned bool
	// cost is the o200k_base token count of Definition, counted when first asked for
	// (see Snapshot.ToolTokens) and shared by the copies of the tool that other
	// snapshots hold (see Snapshot.Subset and Cache).
	cost *cost
	// Index is the tool's position in its Snapshot.
	Index int
}

// Param is one property of a tool's input schema. Nested properties carry a dotted path
// ("filter.state") so they can be searched without being mistaken for top-level ones.
type Param struct {
	Name        string
	Description string
	// Enum holds the string values of the property's "enum", in order, at most
	// MaxEnumValues of them: the words a tool accepts ("celsius", "fahrenheit") say what
	// it does as much as its description.
	Enum     []string
	Required bool
	Depth    int
}

// SearchText is what search indexes for a tool besides its definition, so that an
// operator can make a tool findable without changing what its server sends. The zero
// value indexes the tool as its server describes it.
type SearchText struct {
	// Title and Description, when not empty, replace the tool's own for search.
	Title       string
	Description string
	// Keywords are words search finds the tool by, weighted as its title is.
	Keywords []string
	// Aliases are other names of the tool, weighted as its name is.
	Aliases []string
}

// IsZero reports whether s changes nothing.
func (s SearchText) IsZero() bool {
	return s.Title == "" && s.Description == "" && len(s.Keywords) == 0 && len(s.Aliases) == 0
}

// SearchTitle is the title search indexes: the override's (see SearchText), else Title.
func (t *Tool) SearchTitle() string {
	if t.Search.Title != "" {
		return t.Search.Title
	}
	return t.Title
}

// SearchDescription is the description search indexes: the override's (see
// SearchText), else Description.
func (t *Tool) SearchDescription() string {
	if t.Search.Description != "" {
		return t.Search.Description
	}
	return t.Description
}

// MaxEnumValues is the most enum values a Param keeps; longer lists (every country, every
// time zone) would drown the rest of a tool's text.
const MaxEnumValues = 32

// Definition returns the tool as a client sends it to a model: the Anthropic Messages API
// shape {"name", "description", "input_schema"} under the qualified name, as compact JSON
// (the whitespace of a pretty-printed catalog file is not sent). It is what the token cost
// counts.
func (t *Tool) Definition() []byte {
	name, _ := json.Marshal(t.Qualified)
	desc, _ := json.Marshal(t.Description)
	schema := []byte(`{"type":"object"}`)
	if len(t.InputSchema) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, t.InputSchema) == nil {
			schema = buf.Bytes()
		} else {
			schema = t.InputSchema
		}
	}
	b := make([]byte, 0, len(name)+len(desc)+len(schema)+48)
	b = append(b, `{"name":`...)
	b = append(b, name...)
	b = append(b, `,"description":`...)
	b = append(b, desc...)
	b = append(b, `,"input_schema":`...)
	b = append(b, schema...)
	b = append(b, '}')
	return b
}

// ReadOnly reports the tool's annotations.readOnlyHint.
func (t *Tool) ReadOnly() bool { return t.hint("readOnlyHint", false) }

// Destructive reports the tool's annotations.destructiveHint. MCP's default is true for
// tools that are not read-only, but toolshed only acts on an explicit hint.
func (t *Tool) Destructive() bool { return t.hint("destructiveHint", false) }

func (t *Tool) hint(key string, def bool) bool {
	if len(t.Annotations) == 0 {
		return def
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t.Annotations, &m) != nil {
		return def
	}
	var v bool
	if raw, ok := m[key]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return def
}

// cost is a tool's token count, counted once.
type cost struct {
	once sync.Once
	n    int
	// kept marks the count of a tool a Cache keeps: the cache is its memo, so tokens'
	// own (which remembers counts for builds without a cache, such as a proxy's of each
	// request) is not used.
	kept bool
}

// tokens returns the token count of t's Definition, counting it on first use.
func (t *Tool) tokens() int {
	c := t.cost
	if c == nil {
		return tokens.Count(string(t.Definition())) // a Tool made outside a build
	}
	c.once.Do(func() {
		if c.kept {
			c.n = tokens.CountUncached(string(t.Definition()))
		} else {
			c.n = tokens.Count(string(t.Definition()))
		}
	})
	return c.n
}
