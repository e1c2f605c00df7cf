package search

// termTable maps the 64-bit hash of a token to its term id during an index build. It is
// the build's hottest data structure: every token of every tool goes through it. Open
// addressing over two flat arrays makes a lookup one or two cache lines, several times
// faster than a map keyed by string. Tokens are identified by hash alone; with 64 bits, a
// collision among even a million distinct tokens has a probability near 10^-8, and its
// only effect would be two rare words sharing a term.
type termTable struct {
	keys []uint64 // 0 marks an empty slot; hashes of 0 are stored as 1
	vals []int32
	n    int
}

func newTermTable(capacity int) *termTable {
	size := 1024
	for size < capacity*2 {
		size <<= 1
	}
	return &termTable{keys: make([]uint64, size), vals: make([]int32, size)}
}

func (t *termTable) get(h uint64) (int32, bool) {
	if h == 0 {
		h = 1
	}
	mask := uint64(len(t.keys) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case h:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

func (t *termTable) put(h uint64, v int32) {
	if h == 0 {
		h = 1
	}
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if t.keys[i] == 0 || t.keys[i] == h {
			if t.keys[i] == 0 {
				t.n++
			}
			t.keys[i], t.vals[i] = h, v
			return
		}
	}
}

func (t *termTable) grow() {
	old := *t
	t.keys = make([]uint64, 2*len(old.keys))
	t.vals = make([]int32, 2*len(old.vals))
	t.n = 0
	for i, k := range old.keys {
		if k != 0 {
			t.put(k, old.vals[i])
		}
	}
}
