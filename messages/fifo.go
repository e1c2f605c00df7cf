package messages

// fifoMap is a map that keeps a bounded number of entries, forgetting the oldest first: what
// the Proxy remembers between one request and a later one (a client's rewritten calls,
// the calls waiting for their results), which no client may grow without end. It is
// not safe for concurrent use; its owner locks it.
type fifoMap[K comparable, V any] struct {
	m     map[K]V
	order []K // oldest first; may hold keys taken since, which eviction skips over
}

// add keeps v under k unless k is kept already, and reports whether it did; past max
// entries, the oldest is forgotten.
func (f *fifoMap[K, V]) add(k K, v V, max int) bool {
	if _, ok := f.m[k]; ok {
		return false
	}
	if f.m == nil {
		f.m = map[K]V{}
	}
	if len(f.order) >= max {
		delete(f.m, f.order[0])
		f.order = f.order[1:]
	}
	f.m[k] = v
	f.order = append(f.order, k)
	return true
}

// get returns what is kept under k.
func (f *fifoMap[K, V]) get(k K) (V, bool) {
	v, ok := f.m[k]
	return v, ok
}

// take returns what is kept under k and forgets it.
func (f *fifoMap[K, V]) take(k K) (V, bool) {
	v, ok := f.m[k]
	if ok {
		delete(f.m, k)
	}
	return v, ok
}

func (f *fifoMap[K, V]) len() int { return len(f.m) }
