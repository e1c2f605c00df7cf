package search

import (
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
)

func BenchmarkTokenize(b *testing.B) {
	real, _ := scale.Real("../bench")
	snap, _ := catalog.Build(scale.Catalog(real, 10000))
	var texts []string
	n := 0
	for _, t := range snap.Tools() {
		texts = append(texts, t.Name, t.Description)
		for _, p := range t.Params {
			texts = append(texts, p.Name, p.Description)
		}
	}
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	var buf []byte
	cnt := 0
	emit := func(tok []byte, h uint64) { cnt++ }
	b.ResetTimer()
	for range b.N {
		for _, s := range texts {
			buf = tokenize(s, buf, emit)
		}
	}
	b.ReportMetric(float64(cnt)/float64(b.N), "tokens")
}

// BenchmarkWorkerTokenize is one build worker's first step over 10,000 tools on one
// core, with the stem cache warm: the part of a build that runs over every byte.
func BenchmarkWorkerTokenize(b *testing.B) {
	real, _ := scale.Real("../bench")
	snap, _ := catalog.Build(scale.Catalog(real, 10000))
	tools := snap.Tools()
	hashes := make([]uint64, 2*len(tools))
	NewIndex(snap)
	b.ResetTimer()
	for range b.N {
		w := newWorkersK(tools, 1)[0]
		w.tokenize(tools, hashes)
	}
}
