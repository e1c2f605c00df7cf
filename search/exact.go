package search

// exactNames finds the tools whose bare or qualified name, normalized by normalizeName,
// equals a query. A Go map from name to tools costs a string and a slice per tool to
// build, which at 10,000 tools was a tenth of an index build; this is flat arrays
// keyed by the names' hashes, filled from hashes the build workers compute in parallel.
//
// Entry 2d is tool d's bare name and entry 2d+1 its qualified name. Each slot of the
// table heads a chain of the entries with that hash, in tool order; a lookup compares
// the names themselves, so a hash collision costs nothing but a comparison.
type exactNames struct {
	keys []uint64 // 0 marks an empty slot; hashes of 0 are stored as 1
	head []int32  // per slot, the first entry of its chain
	next []int32  // per entry, the next entry of its chain, or -1
}

// buildExact indexes the tools whose name hashes are hashes[2d] (bare) and
// hashes[2d+1] (qualified).
func buildExact(hashes []uint64) exactNames {
	size := 1024
	for size < 2*len(hashes) {
		size <<= 1
	}
	e := exactNames{keys: make([]uint64, size), head: make([]int32, size), next: make([]int32, len(hashes))}
	mask := uint64(size - 1)
	// Backwards, so that pushing each entry on the front of its chain leaves the
	// chain in tool order.
	for i := len(hashes) - 1; i >= 0; i-- {
		h := max(hashes[i], 1)
		for s := h & mask; ; s = (s + 1) & mask {
			if e.keys[s] == h {
				e.next[i], e.head[s] = e.head[s], int32(i)
				break
			}
			if e.keys[s] == 0 {
				e.keys[s], e.head[s], e.next[i] = h, int32(i), -1
				break
			}
		}
	}
	return e
}

// lookupExact returns the tools whose bare or qualified name, normalized, is name, in tool
// order, each once.
func (ix *Index) lookupExact(name string) []int32 {
	e := &ix.exact
	if len(e.keys) == 0 || name == "" {
		return nil
	}
	h := max(hashToken([]byte(name)), 1)
	mask := uint64(len(e.keys) - 1)
	s := h & mask
	for e.keys[s] != h {
		if e.keys[s] == 0 {
			return nil
		}
		s = (s + 1) & mask
	}
	var docs []int32
	for i := e.head[s]; i >= 0; i = e.next[i] {
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
