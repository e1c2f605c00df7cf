package search

import (
	"container/list"
	"sync"

	"github.com/toolshed/toolshed/catalog"
)

// Cache keeps the indexes of recent catalog snapshots by content hash, so that
// re-assembling an unchanged catalog (every session, every turn) costs a map lookup
// instead of an index build. It is safe for concurrent use; concurrent requests for the
// same new snapshot build its index once.
type Cache struct {
	// Size is the number of indexes kept; 0 means 8.
	Size int
	// Params are the ranking parameters of the indexes built; nil means DefaultParams.
	Params *Params

	mu      sync.Mutex
	entries map[string]*list.Element
	order   list.List // of *cacheEntry, most recent first
	tools   int       // the tools of the snapshots of the entries
	// maxTools, when not 0, bounds tools (see SetMaxTools).
	maxTools int
}

// SetMaxTools bounds the tools the kept indexes hold together (0, the default, is no
// bound), and drops the least recently used past it. An index costs memory by its
// tools, and keeps its catalog alive: a few indexes of a catalog of 10,000 tools
// weigh what hundreds of a small one do, so a count alone does not bound them. The
// index asked for last is kept however large it is.
func (c *Cache) SetMaxTools(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxTools = n
	c.evict()
}

type cacheEntry struct {
	hash  string
	tools int
	ready chan struct{}
	index *Index
}

// Index returns the index of snap, building it if no snapshot with the same hash has been
// indexed recently.
func (c *Cache) Index(snap *catalog.Snapshot) *Index {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*list.Element{}
	}
	if el, ok := c.entries[snap.Hash()]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		<-e.ready
		return e.index
	}
	e := &cacheEntry{hash: snap.Hash(), tools: snap.Len(), ready: make(chan struct{})}
	c.entries[e.hash] = c.order.PushFront(e)
	c.tools += e.tools
	c.evict()
	c.mu.Unlock()

	params := DefaultParams
	if c.Params != nil {
		params = *c.Params
	}
	e.index = NewIndexParams(snap, params)
	close(e.ready)
	return e.index
}

// evict drops the least recently used indexes past the bounds. c.mu is held.
func (c *Cache) evict() {
	size := c.Size
	if size <= 0 {
		size = 8
	}
	for c.order.Len() > size || (c.maxTools > 0 && c.tools > c.maxTools && c.order.Len() > 1) {
		old := c.order.Remove(c.order.Back()).(*cacheEntry)
		delete(c.entries, old.hash)
		c.tools -= old.tools
	}
}

// Len reports how many indexes the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
