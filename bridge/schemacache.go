package bridge

import (
	"container/list"
	"sync"
)

// maxCachedSchemaBytes bounds what compiled holds: 512 KiB, each schema charged its
// source plus entryOverhead bytes. A compiled schema keeps about 6.6 times its source
// live (the 2,143 distinct input schemas of the benchmarks' real tools,
// bench/*/catalog.json: 1.67 MB of source, 11 MB retained once compiled), and a tiny
// one about 1.2 KB whatever its size (a 31-byte schema: 1,218 bytes), which the
// overhead charged accounts for; so the cache keeps at most about 3.4 MiB live,
// whatever the catalog and however many distinct tools are called. That is about 500
// schemas of the mean size (778 bytes), 330 of the 90th percentile (1,352 bytes): the
// hundreds of distinct tools the agents of one gateway call stay compiled. A schema
// pushed out costs its next call one compile, about 0.25 ms (the same 2,143 schemas
// in 0.55 s), small beside the call to the server it precedes.
const (
	maxCachedSchemaBytes = 512 << 10
	entryOverhead        = 256
)

// compiled caches input schemas by content: compiling costs far more than validating,
// and a tool is usually called more than once. Only calls fill it (SchemaProblem
// compiles without keeping), and it drops the least recently used schemas once those it
// holds are charged more than maxCachedSchemaBytes, so neither a catalog that changes forever
// nor a client calling every one of 10,000 tools grows it without end.
var compiled = newSchemaCache(maxCachedSchemaBytes)

// schemaCache is a set of compiled schemas by content key (see schemaKey), bounded by
// the bytes of their source (plus a fixed charge each), from which the least recently
// used are dropped first.
type schemaCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int                        // what the entries held are charged for
	entries  map[[32]byte]*list.Element // of *cacheEntry
	lru      list.List                  // most recently used first
}

// cacheEntry is a compiled schema and what it is charged for (see maxCachedSchemaBytes).
type cacheEntry struct {
	key  [32]byte
	size int
	cs   compiledSchema
}

func newSchemaCache(maxBytes int) *schemaCache {
	return &schemaCache{maxBytes: maxBytes, entries: map[[32]byte]*list.Element{}}
}

// get returns the schema held under key, and marks it as just used.
func (c *schemaCache) get(key [32]byte) (compiledSchema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return compiledSchema{}, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).cs, true
}

// peek is get without marking the schema as used: for a look that is no use of it.
func (c *schemaCache) peek(key [32]byte) (compiledSchema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		return e.Value.(*cacheEntry).cs, true
	}
	return compiledSchema{}, false
}

// add keeps cs, compiled from source bytes of schema, under key, dropping the least
// recently used schemas until the cache is within its bound, and returns the schema
// now held under key: one that another call compiled and added first wins, so every
// caller gets the same. A schema larger than the whole bound is returned but not kept.
func (c *schemaCache) add(key [32]byte, source int, cs compiledSchema) compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry).cs
	}
	size := source + entryOverhead
	if size > c.maxBytes {
		return cs
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, size: size, cs: cs})
	c.bytes += size
	for c.bytes > c.maxBytes {
		old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, old.key)
		c.bytes -= old.size
	}
	return cs
}

// size returns how many schemas the cache holds and what they are charged for.
func (c *schemaCache) size() (n, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}
