package search

import "slices"

// termTable maps the 64-bit hash of a token to a number during an index build. It is the
// build's hottest data structure: every token of every tool goes through it. Open
// addressing over one flat array makes a lookup one cache line, several times faster
// than a map keyed by string, and the slot also holds what the build needs next about
// the token (where its entry for the current tool is), so a token costs one cache miss
// at most. Tokens are identified by hash alone; with 64 bits, a collision among even a
// million distinct tokens has a probability near 10^-8, and its only effect would be two
// rare words sharing a term.
type termTable struct {
	slots []termSlot
	n     int
}

// termSlot is one entry of a termTable.
type termSlot struct {
	key uint64 // the token's hash; 0 marks an empty slot, and hashes of 0 are stored as 1
	id  int32  // the number the table maps the token to
	at  int32  // for the build worker: the position of the token's latest entry (see worker.count), -1 for none yet
}

func newTermTable(capacity int) *termTable {
	return &termTable{slots: make([]termSlot, tableSize(capacity))}
}

// tableSize is the number of slots of a table for capacity entries: the smallest power
// of two, and at least 1024, that they fill at most 70%.
func tableSize(capacity int) int {
	size := 1024
	for size*7 < capacity*10 {
		size <<= 1
	}
	return size
}

// find returns h's slot, and whether h was there before. A new slot has id and at -1.
// The pointer is valid until the next call.
func (t *termTable) find(h uint64) (*termSlot, bool) {
	if h == 0 {
		h = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == h {
			return s, true
		}
		if s.key == 0 {
			if 10*(t.n+1) > 7*len(t.slots) { // at most 70% full
				t.grow()
				return t.find(h)
			}
			t.n++
			*s = termSlot{key: h, id: -1, at: -1}
			return s, false
		}
	}
}

func (t *termTable) grow() { t.resize(2 * len(t.slots)) }

// resize moves t's entries into a new array of size slots.
func (t *termTable) resize(size int) {
	old := t.slots
	t.slots = make([]termSlot, size)
	mask := uint64(size - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := s.key & mask
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// fit moves t's entries into fewer slots when fewer would hold them (see tableSize).
// A build sizes its tables from estimates made before it knows how many entries they
// get, and an index keeps its tables as long as it lives: at 10,000 tools the estimate
// made the term table twice the size its terms need.
func (t *termTable) fit() {
	if size := tableSize(t.n); size < len(t.slots) {
		t.resize(size)
	}
}

// clone returns a copy of t that can change without changing t.
func (t *termTable) clone() *termTable {
	return &termTable{slots: slices.Clone(t.slots), n: t.n}
}

// lookup returns the number h maps to, without adding h.
func (t *termTable) lookup(h uint64) (int32, bool) {
	if h == 0 {
		h = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case h:
			return t.slots[i].id, true
		case 0:
			return 0, false
		}
	}
}
