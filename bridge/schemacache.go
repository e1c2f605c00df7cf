package bridge

import (
	"container/list"
	"sync"
)

// maxCachedSchemaBytes bounds what compiled holds: 1 MiB, each schema charged what
// schemaCharge says. The charge follows what a compiled schema keeps live: about 1.1 KB
// for each subschema (a jsonschema.Schema is 760 bytes before its maps) and a few
// times its text. Measured by compiling them and reading the heap, compiled schemas
// keep 2.2 times their charge for the 2,143 distinct input schemas of the benchmarks'
// real tools (bench/*/catalog.json: 5.6 MB charged, 12.6 MB kept), 3.6 times for tiny
// ones ({"type":"object"} and a title) and at most 4.3 times for schemas of 1,000
// empty properties, the densest form; so the cache keeps at most about 4.5 MiB live,
// whatever the catalog and however many distinct tools are called. That is about 400
// real schemas of the mean charge (2.6 KB): the hundreds of distinct tools the agents
// of one gateway call stay compiled. A schema pushed out costs its next call one
// compile, about 0.25 ms for a real one (2,143 in 0.55 s), small beside the call to the
// server it precedes.
const maxCachedSchemaBytes = 1 << 20

// subschemaCharge is what schemaCharge counts for each object or boolean in a schema.
const subschemaCharge = 256

// schemaCharge is what a schema of source raw is charged in compiled: its length, and
// subschemaCharge for each object and boolean in it outside strings. Every subschema
// is one of those (not every one of those is a subschema: the charge errs high).
func schemaCharge(raw []byte) int {
	n, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{', c == 't', c == 'f': // an object, true, false
			n++
		}
	}
	return len(raw) + n*subschemaCharge
}

// compiled caches input schemas by content: compiling costs far more than validating,
// and a tool is usually called more than once. Only calls fill it (SchemaProblem
// compiles without keeping), and it drops the least recently used schemas once those
// it holds are charged more than maxCachedSchemaBytes, so neither a catalog that
// changes forever nor a client calling every one of 10,000 tools grows it without end.
var compiled = newSchemaCache(maxCachedSchemaBytes)

// schemaCache is a set of compiled schemas by content key (see schemaKey), bounded by
// what they are charged (see schemaCharge), from which the least recently used are
// dropped first.
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

// add keeps cs, charged size (see schemaCharge), under key, dropping the least
// recently used schemas until the cache is within its bound, and returns the schema
// now held under key: one that another call compiled and added first wins, so every
// caller gets the same. A schema larger than the whole bound is returned but not kept.
func (c *schemaCache) add(key [32]byte, size int, cs compiledSchema) compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry).cs
	}
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
