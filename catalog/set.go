package catalog

// Set is a set of tools of one Snapshot, by index. The zero Set is empty; a nil *Set
// passed where a filter is expected means "every tool". Sets are values computed once per
// session plan and read concurrently; do not modify a Set others are reading.
type Set struct {
	bits []uint64
	n    int
}

// NewSet returns an empty set sized for snap.
func NewSet(snap *Snapshot) *Set {
	return &Set{bits: make([]uint64, (snap.Len()+63)/64)}
}

// Add puts tool index i in the set.
func (s *Set) Add(i int) {
	if s.bits[i>>6]&(1<<(i&63)) == 0 {
		s.bits[i>>6] |= 1 << (i & 63)
		s.n++
	}
}

// Has reports whether tool index i is in the set. A nil set has every tool.
func (s *Set) Has(i int) bool {
	if s == nil {
		return true
	}
	return i>>6 < len(s.bits) && s.bits[i>>6]&(1<<(i&63)) != 0
}

// Len is the number of tools in the set.
func (s *Set) Len() int { return s.n }
