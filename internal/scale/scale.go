// Package scale makes large catalogs out of real ones for benchmarks: the same real tool
// definitions, repeated under distinct server names until the catalog reaches the size
// asked for, and the real benchmark queries to run against them.
package scale

import (
	"fmt"
	"path/filepath"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/eval"
)

// Real returns the real tool lists toolshed ships: the built-in catalog plus the
// catalogs of the benchmark sets under benchDir (the repository's bench/ folder).
func Real(benchDir string) ([]catalog.Source, error) {
	sources, problems := builtin.Sources()
	if len(problems) > 0 {
		return nil, problems[0]
	}
	for _, set := range []string{"livemcpbench", "bfcl"} {
		s, ps := catalog.ReadFile(filepath.Join(benchDir, set, "catalog.json"))
		if len(ps) > 0 {
			return nil, ps[0]
		}
		for i := range s {
			// Servers such as "memory" appear in several catalogs; keep them apart.
			s[i].Server = set + "-" + s[i].Server
		}
		sources = append(sources, s...)
	}
	return sources, nil
}

// Queries returns the queries of both benchmark sets under benchDir, interleaved so any
// prefix mixes long task descriptions and short questions.
func Queries(benchDir string) ([]string, error) {
	var sets [][]eval.Query
	for _, set := range []string{"livemcpbench", "bfcl"} {
		qs, err := eval.ReadQueries(filepath.Join(benchDir, set, "queries.jsonl"))
		if err != nil {
			return nil, err
		}
		sets = append(sets, qs)
	}
	var out []string
	for i := 0; i < len(sets[0]) || i < len(sets[1]); i++ {
		for _, qs := range sets {
			if i < len(qs) {
				out = append(out, qs[i].Query)
			}
		}
	}
	return out, nil
}

// Catalog returns sources with exactly n tools, taken from real in order and repeated as
// often as needed, each repetition under server names suffixed "-2", "-3", ...
func Catalog(real []catalog.Source, n int) []catalog.Source {
	var out []catalog.Source
	for copyN := 1; n > 0; copyN++ {
		for _, src := range real {
			if n == 0 {
				break
			}
			s := src
			if copyN > 1 {
				s.Server = fmt.Sprintf("%s-%d", src.Server, copyN)
			}
			if len(s.Tools) > n {
				s.Tools = s.Tools[:n]
			}
			n -= len(s.Tools)
			out = append(out, s)
		}
	}
	return out
}
