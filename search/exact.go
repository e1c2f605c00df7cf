package search

// exactNames finds the tools whose bare or qualified name, normalized by normalizeName,
// equals a query. A Go map from name to tools costs a string and a slice per tool to
// build, which at 10,000 tools was a tenth of an index build; this is a termTable keyed
// by the names' hashes, filled from hashes the build workers compute in parallel.
//
// Entry 2d is tool d's bare name and entry 2d+1 its qualified name. The table maps a
// hash to the first entry of the chain of entries with that hash, in tool order; a
// lookup compares the names themselves, so a hash collision costs nothing but a
// comparison.
type exactNames struct {
	heads *termTable // name hash -> first entry of its chain
	next  []int32    // per entry, the next entry of its chain, or -1

	longest int // bytes of the longest bare or qualified name, before normalizing
}

// buildExact indexes the tools whose name hashes are hashes[2d] (bare) and
// hashes[2d+1] (qualified).
func buildExact(hashes []uint64) exactNames {
	e := exactNames{heads: newTermTable(len(hashes)), next: make([]int32, len(hashes))}
	// Backwards, so that pushing each entry on the front of its chain leaves the
	// chain in tool order.
	for i := len(hashes) - 1; i >= 0; i-- {
		s, seen := e.heads.find(hashes[i])
		e.next[i] = -1
		if seen {
			e.next[i] = s.id
		}
		s.id = int32(i)
	}
	return e
}

// exactQuery is lookupExact of the normalized query, whose shape is sh. Most queries
// are sentences with more letters and digits than any tool's name normalizes to (at
// most 3/2 of its bytes: lowercasing can lengthen a character's encoding by half,
// nothing else lengthens a name, and normalizing keeps each ASCII letter and digit as
// one byte); those it rules out by the count, before normalizing copies the query.
func (ix *Index) exactQuery(query string, sh queryShape) []int32 {
	if sh.alnum > ix.exact.longest*3/2 {
		return nil
	}
	return ix.lookupExact(normalizeName(query))
}

// lookupExact returns the tools whose bare or qualified name, normalized, is name, in tool
// order, each once.
func (ix *Index) lookupExact(name string) []int32 {
	e := &ix.exact
	if e.heads == nil || name == "" {
		return nil
	}
	head, ok := e.heads.lookup(hashToken([]byte(name)))
	if !ok {
		return nil
	}
	var docs []int32
	for i := head; i >= 0; i = e.next[i] {
		d := i / 2
		if len(docs) > 0 && docs[len(docs)-1] == d {
			continue
		}
		t := ix.snap.Tool(int(d))
		if i%2 == 1 && normalizeName(t.Qualified) == name || i%2 == 0 && normalizeName(t.Name) == name {
			docs = append(docs, d)
		}
	}
	return docs
}
