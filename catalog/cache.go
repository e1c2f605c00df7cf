package catalog

import (
	"encoding/json"
	"sync"
)

// A Cache keeps the decoded tools of one process's catalog between builds. A gateway
// builds its whole catalog again whenever any server starts, stops or relists, and
// decoding every definition (names, descriptions, every parameter for search) was most
// of that: at 10,000 tools, a few tenths of a second of CPU and about 30 MB of garbage
// for every build, three builds before the first tools/list. Through a Cache each
// definition is decoded, and its tokens counted, once for as long as its server keeps
// listing it.
//
// A definition is known by the memory that holds it, not by its content: the same
// slice of the same buffer (as a server's list stays from one build to the next) is the
// same definition, since nothing in toolshed writes to a definition once received. A
// relist in new buffers is decoded again, which is what a change would need anyway, and
// nothing has to be hashed to find an entry. Entries keep their buffers alive, so Prune
// drops those no build used since the previous Prune.
//
// The zero Cache is ready to use, and a nil *Cache builds as Build does. A Cache is
// safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
}

// cacheKey is a definition's identity: its server and the memory of its bytes.
type cacheKey struct {
	server string
	data   *byte
	n      int
}

// cacheEntry is what the last build that met a definition made of it.
type cacheEntry struct {
	// tool is that build's tool: never written once its build returned, so a later
	// build copies it (see reuse) instead of decoding again.
	tool *Tool
	// err is why the definition cannot be used, for one that decodeTool refused
	// (tool is then what it could read, or nil).
	err error
	// pinned is what the definition's own _meta says (see Tool.Pinned), before a
	// build adds its source's AlwaysLoad.
	pinned bool
	used   bool
}

// Build is Build with the cache: a definition met before is not decoded again, and its
// token count is shared while its qualified name stays the same.
func (c *Cache) Build(sources []Source) (*Snapshot, []Problem) {
	return build(sources, c)
}

// Prune forgets the definitions no build used since the last Prune, so that the
// cache holds about what the catalogs built meanwhile hold. A gateway prunes after
// each assembly.
func (c *Cache) Prune() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !e.used {
			delete(c.entries, k)
		}
		e.used = false
	}
}

// Len is the number of definitions the cache holds.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// decode returns decodeTool's tool for raw, from the cache when it holds raw, and the
// entry to record the built tool in (see keep); the tool is the caller's to change.
func (c *Cache) decode(server string, raw json.RawMessage) (*Tool, *cacheEntry, error) {
	if c == nil || len(raw) == 0 {
		t, err := decodeTool(server, raw)
		return t, nil, err
	}
	key := cacheKey{server, &raw[0], len(raw)}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && (e.tool != nil || e.err != nil) {
		e.used = true
		var t *Tool
		if e.tool != nil {
			t = e.tool.decoded()
			t.Pinned = e.pinned
		}
		c.mu.Unlock()
		return t, e, e.err
	}
	c.mu.Unlock()
	t, err := decodeTool(server, raw)
	e := &cacheEntry{err: err, used: true}
	if err != nil {
		e.tool = t // for the problem's label; a refused tool is never built on
	} else {
		e.pinned = t.Pinned
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[cacheKey]*cacheEntry{}
	}
	c.entries[key] = e
	c.mu.Unlock()
	return t, e, err
}

// keep records t, built from the entry's definition, as the tool a later build copies
// (the newest build's tools are the ones kept alive anyway), and gives t its token
// count: the one of the tool it replaces when the qualified name, and so the
// definition a model is sent, is the same. t is not written after keep.
func (c *Cache) keep(e *cacheEntry, t *Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := e.tool; prev != nil && prev.Qualified == t.Qualified && prev.cost != nil {
		t.cost = prev.cost
	} else {
		t.cost = &cost{kept: true}
	}
	e.tool = t
}

// decoded is a copy of t with only what decodeTool sets (the fields a build sets are
// left for the build), without the pinning of t's source.
func (t *Tool) decoded() *Tool {
	return &Tool{Server: t.Server, Name: t.Name, Title: t.Title, Description: t.Description,
		Params: t.Params, Required: t.Required, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Annotations: t.Annotations, Meta: t.Meta, Raw: t.Raw}
}
