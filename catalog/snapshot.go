package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Source is the tool list of one server as it arrived: from a catalog file, or from a live
// `tools/list`.
type Source struct {
	// Server names the server; it prefixes every qualified name (see ServerName).
	Server string
	// AlwaysLoad pins every tool of the server: they are never deferred.
	AlwaysLoad bool
	// Tools are the tool definitions, each exactly as received.
	Tools []json.RawMessage
	// Origin says where the list came from, for error messages.
	Origin string
	// Search holds, by the tool's own name, what search indexes for some of the tools
	// besides their definitions (see SearchText): an operator's keywords, aliases or
	// replacement text. Tools it does not name are indexed as their server describes
	// them.
	Search map[string]SearchText
}

// Snapshot is an immutable catalog: every tool of every source, in source order, with a
// content hash that changes whenever anything a client or the search index could see
// changes. A Snapshot is safe for concurrent use.
type Snapshot struct {
	tools   []*Tool
	byName  map[string]*Tool
	byBare  map[string][]*Tool
	servers []ServerSummary

	// hash is worked out when first asked for: most snapshots (a server's own, to
	// count its tokens) are never compared.
	hashOnce sync.Once
	hash     string

	tokensOnce sync.Once
	tokens     int
}

// ServerSummary gives the size and cost of one server in a Snapshot.
type ServerSummary struct {
	Name   string
	Tools  int
	Tokens int
}

// Build assembles a Snapshot from sources. A tool that cannot be used (no name, a
// collision, a schema that is not an object, wrong field types) is left out and reported
// as a Problem; everything else still loads. Build never fails as a whole.
func Build(sources []Source) (*Snapshot, []Problem) { return build(sources, nil) }

// build is Build, through the cache c when it is not nil.
func build(sources []Source, c *Cache) (*Snapshot, []Problem) {
	n := 0
	for _, src := range sources {
		n += len(src.Tools)
	}
	s := &Snapshot{byName: make(map[string]*Tool, n), byBare: make(map[string][]*Tool, n)}
	var problems []Problem

	// Decode every tool first, grouped by server (sources naming one server merge), so
	// that names can be given per server with all its tools in view.
	type decoded struct {
		tool      *Tool
		raw       json.RawMessage
		origin    string
		sanitized bool
		cached    *cacheEntry
	}
	var order []string
	byServer := map[string][]decoded{}
	for _, src := range sources {
		server, err := ServerName(src.Server)
		if err != nil {
			problems = append(problems, Problem{Origin: src.Origin, Server: src.Server, Err: err})
			continue
		}
		if _, seen := byServer[server]; !seen {
			order = append(order, server)
			byServer[server] = []decoded{}
		}
		for i, raw := range src.Tools {
			t, cached, err := c.decode(server, raw)
			if err != nil {
				problems = append(problems, Problem{Origin: src.Origin, Server: server, Tool: toolLabel(t, i), Err: err})
				continue
			}
			t.Pinned = t.Pinned || src.AlwaysLoad
			if st, ok := src.Search[t.Name]; ok {
				t.Search = st
			}
			var changed bool
			t.Qualified, changed = qualify(server, t.Name)
			byServer[server] = append(byServer[server], decoded{t, raw, src.Origin, changed, cached})
		}
	}

	for _, server := range order {
		tools := byServer[server]
		summary := ServerSummary{Name: server}
		// A tool whose name is already valid keeps its plain qualified name; a tool
		// whose sanitized name ("a.b" -> "a_b") would take it gets a hash suffix.
		claimed := make(map[string]*Tool, len(tools))
		for _, d := range tools {
			if _, taken := claimed[d.tool.Qualified]; !d.sanitized && !taken {
				claimed[d.tool.Qualified] = d.tool
			}
		}
		for _, d := range tools {
			t := d.tool
			if holder, taken := claimed[t.Qualified]; taken && holder != t && holder.Name != t.Name {
				t.Qualified = withHash(t.Qualified, server, t.Name)
			}
			if prev, dup := s.byName[t.Qualified]; dup {
				err := fmt.Errorf("%w: its qualified name %q is already taken by tool %q; rename one of them", ErrDuplicate, t.Qualified, prev.Name)
				if prev.Name == t.Name {
					err = fmt.Errorf("%w: the server lists a tool named %q twice; the first one is kept", ErrDuplicate, t.Name)
				}
				problems = append(problems, Problem{Origin: d.origin, Server: server, Tool: strconv.Quote(t.Name), Err: err})
				continue
			}
			claimed[t.Qualified] = t
			t.Index = len(s.tools)
			if d.cached != nil {
				c.keep(d.cached, t)
			} else {
				t.cost = &cost{}
			}
			s.tools = append(s.tools, t)
			s.byName[t.Qualified] = t
			s.byBare[t.Name] = append(s.byBare[t.Name], t)
			summary.Tools++
		}
		s.servers = append(s.servers, summary)
	}
	return s, problems
}

// hashTool adds t to a snapshot's content hash: its server, pinning, definition as
// received and what an override makes search index.
func hashTool(h hash.Hash, t *Tool) {
	var buf [64]byte
	b := append(append(buf[:0], t.Server...), 0)
	b = append(strconv.AppendBool(b, t.Pinned), 0)
	b = append(strconv.AppendInt(b, int64(len(t.Raw)), 10), 0)
	h.Write(b)
	h.Write(t.Raw)
	if !t.Search.IsZero() {
		// What search indexes is part of the content: an index cached by the hash
		// must not be one built without the override.
		fmt.Fprintf(h, "\x01%q\x00%q\x00%q\x00%q\x00", t.Search.Title, t.Search.Description, t.Search.Keywords, t.Search.Aliases)
	}
}

// Subset returns the catalog of the tools of s that keep admits, in s's order, as Build
// makes it of just those tools: everything derived from it (a search index's term
// statistics and fallbacks, a lookup by bare name, the token figures) depends on them
// alone, which is how a session limited to some tools is kept from learning anything
// of the others (see policy.Scope.Catalog). Each tool is a copy with its own Index and
// with the qualified name it has in s; the hash is the one Build gives the same
// definitions, so that an index cached by hash is shared with any catalog of the same
// tools, and a subset whose tools did not change is not indexed again when the rest of
// s did. Only the servers of kept tools are listed. Tokens are counted once, in s, and
// shared with s. When keep admits every tool, Subset returns s itself.
func (s *Snapshot) Subset(keep func(*Tool) bool) *Snapshot {
	var from []int
	for i, t := range s.tools {
		if keep(t) {
			from = append(from, i)
		}
	}
	if len(from) == len(s.tools) {
		return s
	}
	sub := &Snapshot{byName: make(map[string]*Tool, len(from)), byBare: map[string][]*Tool{}}
	for _, i := range from {
		o := s.tools[i]
		t := *o
		t.Index = len(sub.tools)
		sub.tools = append(sub.tools, &t)
		sub.byName[t.Qualified] = &t
		sub.byBare[t.Name] = append(sub.byBare[t.Name], &t)
		if n := len(sub.servers); n == 0 || sub.servers[n-1].Name != t.Server {
			sub.servers = append(sub.servers, ServerSummary{Name: t.Server})
		}
		sub.servers[len(sub.servers)-1].Tools++
	}
	return sub
}

// countTokens counts every tool's tokens, once. Counting is the costliest part of a
// build and most readers (a search, a call) never need it, so it waits until asked; a
// tool whose count another snapshot already has (a subset's, or one a Cache carried
// over) is not counted again.
func (s *Snapshot) countTokens() {
	s.tokensOnce.Do(func() {
		var wg sync.WaitGroup
		workers := min(runtime.GOMAXPROCS(0), 8)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(s.tools); i += workers {
					s.tools[i].tokens()
				}
			}()
		}
		wg.Wait()
		s.sumTokens()
	})
}

// sumTokens adds the tools' token counts up, by server and in all.
func (s *Snapshot) sumTokens() {
	si := map[string]int{}
	for i := range s.servers {
		si[s.servers[i].Name] = i
	}
	for _, t := range s.tools {
		n := t.tokens()
		s.servers[si[t.Server]].Tokens += n
		s.tokens += n
	}
}

func toolLabel(t *Tool, i int) string {
	if t != nil && t.Name != "" {
		return strconv.Quote(t.Name)
	}
	return "#" + strconv.Itoa(i+1)
}

// Hash is the hex SHA-256 of the snapshot's content: servers, pinning and every
// definition. Equal hashes mean the same catalog, so indexes can be cached by it.
func (s *Snapshot) Hash() string {
	s.hashOnce.Do(func() {
		h := sha256.New()
		for _, t := range s.tools {
			hashTool(h, t)
		}
		s.hash = hex.EncodeToString(h.Sum(nil))
	})
	return s.hash
}

// Len is the number of tools.
func (s *Snapshot) Len() int { return len(s.tools) }

// Tools returns every tool in catalog order. The slice is shared: do not modify it.
func (s *Snapshot) Tools() []*Tool { return s.tools }

// Tool returns the tool at index i.
func (s *Snapshot) Tool(i int) *Tool { return s.tools[i] }

// Servers returns each server with its tool count and token cost, in catalog order.
func (s *Snapshot) Servers() []ServerSummary {
	s.countTokens()
	return s.servers
}

// Tokens is the total token cost of every definition.
func (s *Snapshot) Tokens() int {
	s.countTokens()
	return s.tokens
}

// ToolTokens is the token cost of one of the snapshot's tools (see Tool.Definition).
func (s *Snapshot) ToolTokens(t *Tool) int {
	s.countTokens()
	return t.tokens()
}

// Lookup finds a tool by qualified name, or by its bare name when exactly one server has a
// tool of that name. Tools for which visible returns false (nil means all are visible) are
// treated as absent, so a caller limited to a scope learns nothing of the others. An
// unknown name wraps ErrUnknownTool; a bare name several servers share wraps ErrAmbiguous
// and lists the qualified names to choose from.
func (s *Snapshot) Lookup(name string, visible func(*Tool) bool) (*Tool, error) {
	if t, ok := s.byName[name]; ok && (visible == nil || visible(t)) {
		return t, nil
	}
	var found []*Tool
	for _, t := range s.byBare[name] {
		if visible == nil || visible(t) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	case 1:
		return found[0], nil
	default:
		names := make([]string, len(found))
		for i, t := range found {
			names[i] = t.Qualified
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: %q is offered by %d servers; use one of %s", ErrAmbiguous, name, len(found), strings.Join(names, ", "))
	}
}
