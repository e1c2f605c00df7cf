// Package eval measures retrieval quality and speed on a benchmark set: a catalog and
// queries whose relevant tools are known (the format of bench/README.md).
package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/toolshed/toolshed/catalog"
)

// Query is one benchmark question and the bare names of the tools that answer it.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// ReadQueries reads a queries.jsonl file: one Query per line; blank lines are skipped.
func ReadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []Query
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var q Query
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, fmt.Errorf("%s:%d: not a query object: %v", path, line, err)
		}
		if q.Query == "" || len(q.Relevant) == 0 {
			return nil, fmt.Errorf("%s:%d: a query needs a non-empty \"query\" and \"relevant\"", path, line)
		}
		qs = append(qs, q)
	}
	return qs, sc.Err()
}

// Report holds the figures of one run. Metrics are fractions from 0 to 1, averaged over
// queries; latencies are per search call.
type Report struct {
	Recall1  float64 `json:"recall@1"`
	Recall5  float64 `json:"recall@5"`
	Recall10 float64 `json:"recall@10"`
	NDCG5    float64 `json:"ndcg@5"`
	NDCG10   float64 `json:"ndcg@10"`
	Comp5    float64 `json:"comp@5"`
	MRR      float64 `json:"mrr"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	BuildMS  float64 `json:"build_ms"`
	Tools    int     `json:"tools"`
	Queries  int     `json:"queries"`
	Errors   int     `json:"errors"`
	// Misses are the queries whose first five answers lack a relevant tool, in the
	// order of the queries file: what to read to see why recall@5 is not 1.
	Misses []Miss `json:"misses,omitempty"`
}

// Miss is a query whose first five distinct answers lack at least one relevant tool.
type Miss struct {
	ID    string `json:"id"`
	Query string `json:"query"`
	// Relevant gives each relevant name's rank among the distinct names returned (1 is
	// first), 0 when it is not among the first Depth.
	Relevant []Ranked `json:"relevant"`
	// Top are the first five distinct names returned.
	Top []string `json:"top"`
	// Error is the search's error, if it failed.
	Error string `json:"error,omitempty"`
}

// Ranked is a tool name and its rank, 0 for none.
type Ranked struct {
	Name string `json:"name"`
	Rank int    `json:"rank"`
}

// SearchFunc runs one query and returns tools best first.
type SearchFunc func(query string) ([]*catalog.Tool, error)

// Depth is how many results each query asks for: enough that ten distinct names remain
// after tools of the same name on different servers are merged.
const Depth = 50

// Run answers every query with search and scores the ranking. A returned tool counts
// under its bare name, each name once, so a tool offered by several servers is one
// answer. A query whose search fails scores zero and is counted in Errors.
func Run(queries []Query, tools int, buildTime time.Duration, search SearchFunc) Report {
	r := Report{Tools: tools, Queries: len(queries), BuildMS: float64(buildTime.Microseconds()) / 1000}
	lat := make([]float64, 0, len(queries))
	for _, q := range queries {
		start := time.Now()
		found, err := search(q.Query)
		lat = append(lat, float64(time.Since(start).Nanoseconds())/1000)
		if err != nil {
			r.Errors++
			r.Misses = append(r.Misses, miss(q, nil, err))
			continue
		}
		ranked := distinctNames(found, 10)
		rel := map[string]bool{}
		for _, name := range q.Relevant {
			rel[name] = true
		}
		r5 := recall(ranked, rel, 5)
		if r5 < 1 {
			r.Misses = append(r.Misses, miss(q, distinctNames(found, Depth), nil))
		} else {
			r.Comp5++
		}
		r.Recall1 += recall(ranked, rel, 1)
		r.Recall5 += r5
		r.Recall10 += recall(ranked, rel, 10)
		r.NDCG5 += ndcg(ranked, rel, 5)
		r.NDCG10 += ndcg(ranked, rel, 10)
		for i, name := range ranked {
			if rel[name] {
				r.MRR += 1 / float64(i+1)
				break
			}
		}
	}
	if n := float64(len(queries)); n > 0 {
		for _, m := range []*float64{&r.Recall1, &r.Recall5, &r.Recall10, &r.NDCG5, &r.NDCG10, &r.Comp5, &r.MRR} {
			*m /= n
		}
	}
	sort.Float64s(lat)
	r.P50us = percentile(lat, 0.50)
	r.P99us = percentile(lat, 0.99)
	return r
}

// miss describes q, whose search returned the distinct names ranked or failed with err.
func miss(q Query, ranked []string, err error) Miss {
	m := Miss{ID: q.ID, Query: q.Query, Top: append([]string{}, ranked[:min(5, len(ranked))]...)}
	if err != nil {
		m.Error = err.Error()
	}
	for _, name := range q.Relevant {
		m.Relevant = append(m.Relevant, Ranked{Name: name, Rank: slices.Index(ranked, name) + 1})
	}
	return m
}

// distinctNames returns the first k distinct bare names of tools.
func distinctNames(tools []*catalog.Tool, k int) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tools {
		if len(out) == k {
			break
		}
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t.Name)
		}
	}
	return out
}

func recall(ranked []string, rel map[string]bool, k int) float64 {
	hit := 0
	for i := 0; i < k && i < len(ranked); i++ {
		if rel[ranked[i]] {
			hit++
		}
	}
	return float64(hit) / float64(len(rel))
}

func ndcg(ranked []string, rel map[string]bool, k int) float64 {
	var dcg, idcg float64
	for i := 0; i < k && i < len(ranked); i++ {
		if rel[ranked[i]] {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := 0; i < k && i < len(rel); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	return dcg / idcg
}

// percentile reads the p-quantile of sorted values by the nearest-rank method.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
