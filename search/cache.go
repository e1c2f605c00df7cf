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
}

type cacheEntry struct {
	hash  string
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
	e := &cacheEntry{hash: snap.Hash(), ready: make(chan struct{})}
	c.entries[e.hash] = c.order.PushFront(e)
	size := c.Size
	if size <= 0 {
		size = 8
	}
	for c.order.Len() > size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).hash)
	}
	c.mu.Unlock()

	params := DefaultParams
	if c.Params != nil {
		params = *c.Params
	}
	e.index = NewIndexParams(snap, params)
	close(e.ready)
	return e.index
}

// Len reports how many indexes the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
