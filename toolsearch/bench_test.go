package toolsearch

import (
	"encoding/json"
	"testing"
)

func BenchmarkTools(b *testing.B) {
	snap := builtinSnapshot(b)
	opts := Options{DeferByDefault: true, Search: SearchBM25}
	for b.Loop() {
		if _, err := Tools(snap, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearcherHandle(b *testing.B) {
	s, err := NewSearcher(builtinSnapshot(b), Options{DeferByDefault: true})
	if err != nil {
		b.Fatal(err)
	}
	input := json.RawMessage(`{"query":"create a github issue"}`)
	for b.Loop() {
		s.HandleInput("toolu_01", input)
	}
}
