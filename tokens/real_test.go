package tokens_test

import (
	"testing"

	"github.com/tiktoken-go/tokenizer"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/tokens"
)

// definitions returns the definition of every tool of every catalog toolshed ships (the
// built-in catalog, livemcpbench and bfcl), as the plan counts them.
func definitions(t testing.TB) []string {
	real, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	snap, problems := catalog.Build(real)
	if len(problems) > 0 {
		t.Fatal(problems[0])
	}
	var out []string
	for _, tool := range snap.Tools() {
		out = append(out, string(tool.Definition()), tool.Description)
	}
	return out
}

// TestCountRealDefinitions counts every definition as the tokenizer library toolshed
// used before does.
func TestCountRealDefinitions(t *testing.T) {
	lib, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	defs := definitions(t)
	if len(defs) < 1000 {
		t.Fatalf("%d definitions", len(defs))
	}
	for _, d := range defs {
		want, err := lib.Count(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := tokens.Count(d); got != want {
			t.Errorf("Count = %d, library %d, for %.200s", got, want, d)
		}
	}
}

// BenchmarkCount counts every real definition once per iteration, with the memo
// bypassed (each text is new to it), as a start at 10,000 tools does.
func BenchmarkCount(b *testing.B) { benchmarkCount(b, tokens.CountUncached) }

// BenchmarkCountLibrary is BenchmarkCount with the tokenizer library, for comparison.
func BenchmarkCountLibrary(b *testing.B) {
	lib, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkCount(b, func(d string) int { n, _ := lib.Count(d); return n })
}

// benchmarkCount counts every real definition with count once per iteration.
func benchmarkCount(b *testing.B, count func(string) int) {
	defs := definitions(b)
	bytes := 0
	for _, d := range defs {
		bytes += len(d)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range defs {
			count(d)
		}
	}
}
