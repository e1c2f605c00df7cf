package search

import "slices"

// exactNames finds the tools whose bare or qualified name, normalized by normalizeName,
// equals a query. A Go map from name to tools costs a string and a slice per tool to
// build, which at 10,000 tools was a tenth of an index build; this is a sorted list of
// the names' hashes, which the build workers compute in parallel.
//
// Entry 2d is tool d's bare name and entry 2d+1 its qualified name. Each entry is one
// word: the upper half of its name's hash above the entry's number, so that sorting
// the words puts the entries of a name in one run, in tool order, and a lookup is a
// binary search. It compares the names themselves, so a hash collision (two of 20,000
// names share 32 bits of hash with a chance of about 1 in 20) costs nothing but a
// comparison. A hash table with a chain of entries per name took about 30 bytes an
// entry where this takes 8: 592 KiB against 156 KiB at 10,000 tools, kept as long as
// the index.
type exactNames struct {
	entries []uint64 // hash<<32 | entry, sorted

	longest int // bytes of the longest bare or qualified name, before normalizing
}

// entryMask is the part of an exactNames word that holds the entry's number.
const entryMask = 1<<32 - 1

// buildExact indexes the tools whose name hashes are hashes[2d] (bare) and
// hashes[2d+1] (qualified).
func buildExact(hashes []uint64) exactNames {
	e := exactNames{entries: make([]uint64, len(hashes))}
	for i, h := range hashes {
		e.entries[i] = h&^entryMask | uint64(i)
	}
	slices.Sort(e.entries)
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
	entries := ix.exact.entries
	if len(entries) == 0 || name == "" {
		return nil
	}
	h := hashToken([]byte(name)) &^ entryMask
	var docs []int32
	// h's entry number is 0, so the search lands on the first word of h's run, if any.
	for i, _ := slices.BinarySearch(entries, h); i < len(entries) && entries[i]&^entryMask == h; i++ {
		entry := int32(entries[i] & entryMask)
		d := entry / 2
		if len(docs) > 0 && docs[len(docs)-1] == d {
			continue
		}
		t := ix.snap.Tool(int(d))
		if entry%2 == 1 && normalizeName(t.Qualified) == name || entry%2 == 0 && normalizeName(t.Name) == name {
			docs = append(docs, d)
		}
	}
	return docs
}
