package eval

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// tools returns one tool per qualified name "server__name" (or a bare name).
func tools(qualified ...string) []*catalog.Tool {
	var out []*catalog.Tool
	for _, q := range qualified {
		server, name, ok := strings.Cut(q, "__")
		if !ok {
			server, name = "s", q
		}
		out = append(out, &catalog.Tool{Server: server, Name: name, Qualified: server + "__" + name})
	}
	return out
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func TestDistinctNames(t *testing.T) {
	tests := []struct {
		found []*catalog.Tool
		k     int
		want  []string
	}{
		{tools(), 10, nil},
		{tools("a", "b", "c"), 10, []string{"a", "b", "c"}},
		{tools("x__a", "y__a", "b", "z__a", "c"), 10, []string{"a", "b", "c"}},
		{tools("a", "b", "c", "d"), 2, []string{"a", "b"}},
		{tools("x__a", "y__a", "z__a"), 1, []string{"a"}},
	}
	for _, tc := range tests {
		if got := distinctNames(tc.found, tc.k); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("distinctNames(%d tools, %d) = %q, want %q", len(tc.found), tc.k, got, tc.want)
		}
	}
}

func TestRecall(t *testing.T) {
	tests := []struct {
		ranked []string
		rel    map[string]bool
		k      int
		want   float64
	}{
		{[]string{"a", "b", "c"}, set("a"), 1, 1},
		{[]string{"b", "a", "c"}, set("a"), 1, 0},
		{[]string{"b", "a", "c"}, set("a"), 2, 1},
		{[]string{"a", "x", "b", "y", "c"}, set("a", "b", "c", "d"), 5, 0.75},
		{[]string{"a", "x", "b", "y", "c"}, set("a", "b", "c", "d"), 3, 0.5},
		{[]string{"a"}, set("a", "b"), 10, 0.5}, // fewer results than k
		{nil, set("a"), 5, 0},
		{[]string{"x", "y"}, set("a"), 5, 0},
	}
	for _, tc := range tests {
		if got := recall(tc.ranked, tc.rel, tc.k); !near(got, tc.want) {
			t.Errorf("recall(%q, %v, %d) = %v, want %v", tc.ranked, tc.rel, tc.k, got, tc.want)
		}
	}
}

func TestNDCG(t *testing.T) {
	l2, l3, l4 := math.Log2(2), math.Log2(3), math.Log2(4)
	tests := []struct {
		ranked []string
		rel    map[string]bool
		k      int
		want   float64
	}{
		{[]string{"a", "b"}, set("a"), 5, 1},
		{[]string{"x", "a"}, set("a"), 5, (1 / l3) / (1 / l2)},                           // 0.6309
		{[]string{"x", "a", "b"}, set("a", "b"), 5, (1/l3 + 1/l4) / (1/l2 + 1/l3)},       // 0.6934
		{[]string{"a", "x", "b"}, set("a", "b", "c"), 2, 1 / (1/l2 + 1/l3)},              // ideal over min(k, 3) = 2
		{[]string{"a", "x", "b"}, set("a", "b", "c"), 5, (1 + 1/l4) / (1 + 1/l3 + 1/l4)}, // 0.7039
		{[]string{"x", "y"}, set("a"), 5, 0},
		{[]string{"b", "a"}, set("a", "b"), 10, 1},
	}
	for _, tc := range tests {
		if got := ndcg(tc.ranked, tc.rel, tc.k); !near(got, tc.want) {
			t.Errorf("ndcg(%q, %v, %d) = %v, want %v", tc.ranked, tc.rel, tc.k, got, tc.want)
		}
	}
	if got := ndcg([]string{"x", "a"}, set("a"), 5); !near(got, 0.6309297535714574) {
		t.Errorf("ndcg = %v, want 0.63093", got)
	}
}

func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.5, 7},
		{[]float64{7}, 0.99, 7},
		{ten, 0.5, 5},   // nearest rank ceil(5) = 5
		{ten, 0.99, 10}, // ceil(9.9) = 10
		{ten, 0.1, 1},
		{ten, 0.11, 2},
		{ten, 0, 1},
		{ten, 1, 10},
		{hundred, 0.5, 50},
		{hundred, 0.99, 99},
		{[]float64{1, 2, 3}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.5, 2},
	}
	for _, tc := range tests {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

// TestRun scores three queries with known answers; every figure is computed by hand.
func TestRun(t *testing.T) {
	queries := []Query{
		{ID: "q1", Query: "one", Relevant: []string{"a"}},
		{ID: "q2", Query: "two", Relevant: []string{"a", "b", "a"}}, // "a" counts once
		{ID: "q3", Query: "three", Relevant: []string{"z"}},
	}
	answers := map[string][]*catalog.Tool{
		// a first: everything perfect.
		"one": tools("s1__a", "s2__a", "b"),
		// a on two servers is one answer, so b is the second distinct name.
		"two": tools("x", "s1__a", "s2__a", "s3__a", "b", "c"),
		// z is the eleventh distinct name: outside every cut-off.
		"three": tools("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "z"),
	}
	r := Run(queries, 42, 1500*time.Microsecond, func(q string) ([]*catalog.Tool, error) { return answers[q], nil })
	l2, l3, l4 := math.Log2(2), math.Log2(3), math.Log2(4)
	want := Report{
		Recall1:  (1 + 0 + 0) / 3.0,
		Recall5:  (1 + 1 + 0) / 3.0,
		Recall10: (1 + 1 + 0) / 3.0,
		NDCG5:    (1 + (1/l3+1/l4)/(1/l2+1/l3) + 0) / 3,
		NDCG10:   (1 + (1/l3+1/l4)/(1/l2+1/l3) + 0) / 3,
		Comp5:    (1 + 1 + 0) / 3.0,
		MRR:      (1 + 0.5 + 0) / 3,
		BuildMS:  1.5,
		Tools:    42,
		Queries:  3,
	}
	got := r
	got.P50us, got.P99us = 0, 0
	for _, m := range []struct {
		name      string
		got, want float64
	}{
		{"recall@1", got.Recall1, want.Recall1}, {"recall@5", got.Recall5, want.Recall5}, {"recall@10", got.Recall10, want.Recall10},
		{"ndcg@5", got.NDCG5, want.NDCG5}, {"ndcg@10", got.NDCG10, want.NDCG10}, {"comp@5", got.Comp5, want.Comp5},
		{"mrr", got.MRR, want.MRR}, {"build_ms", got.BuildMS, want.BuildMS},
	} {
		if !near(m.got, m.want) {
			t.Errorf("%s = %v, want %v", m.name, m.got, m.want)
		}
	}
	if got.Tools != 42 || got.Queries != 3 || got.Errors != 0 {
		t.Errorf("tools %d queries %d errors %d", got.Tools, got.Queries, got.Errors)
	}
	if r.P50us < 0 || r.P99us < r.P50us {
		t.Errorf("latencies p50 %v p99 %v", r.P50us, r.P99us)
	}
}

func TestRunCompleteness(t *testing.T) {
	// comp@5 counts a query only when all its relevant names are in the first five.
	queries := []Query{
		{Query: "all", Relevant: []string{"a", "b"}},
		{Query: "half", Relevant: []string{"a", "f"}},
		{Query: "late", Relevant: []string{"a", "b", "c", "d", "e", "f"}},
	}
	answers := map[string][]*catalog.Tool{
		"all":  tools("b", "x", "y", "z", "a"),
		"half": tools("a", "b", "c", "d", "e", "f"),
		"late": tools("a", "b", "c", "d", "e", "f"),
	}
	r := Run(queries, 0, 0, func(q string) ([]*catalog.Tool, error) { return answers[q], nil })
	if !near(r.Comp5, 1.0/3) {
		t.Errorf("comp@5 = %v, want 1/3", r.Comp5)
	}
	if want := (1 + 0.5 + 5.0/6) / 3; !near(r.Recall5, want) {
		t.Errorf("recall@5 = %v, want %v", r.Recall5, want)
	}
	if want := (1 + 1 + 1) / 3.0; !near(r.MRR, want) {
		t.Errorf("MRR = %v, want %v", r.MRR, want)
	}
}

func TestRunErrors(t *testing.T) {
	queries := []Query{{Query: "ok", Relevant: []string{"a"}}, {Query: "fails", Relevant: []string{"a"}}}
	r := Run(queries, 1, 0, func(q string) ([]*catalog.Tool, error) {
		if q == "fails" {
			return tools("a"), errors.New("boom")
		}
		return tools("a"), nil
	})
	if r.Errors != 1 || !near(r.Recall1, 0.5) || !near(r.MRR, 0.5) || r.Queries != 2 {
		t.Errorf("report %+v: a failed query must score zero and count as an error", r)
	}
	empty := Run(nil, 0, 0, func(string) ([]*catalog.Tool, error) { return nil, nil })
	if !reflect.DeepEqual(empty, Report{}) {
		t.Errorf("no queries: %+v", empty)
	}
	if want := []Miss{{Query: "fails", Relevant: []Ranked{{"a", 0}}, Top: []string{}, Error: "boom"}}; !reflect.DeepEqual(r.Misses, want) {
		t.Errorf("misses %+v, want %+v", r.Misses, want)
	}
}

// TestRunMisses checks that the queries missing a relevant tool in their first five
// distinct names are listed, each relevant tool with its rank among the first Depth.
func TestRunMisses(t *testing.T) {
	queries := []Query{
		{ID: "hit", Query: "hit", Relevant: []string{"a"}},
		{ID: "late", Query: "late", Relevant: []string{"a", "g"}},
		{ID: "none", Query: "none", Relevant: []string{"z"}},
	}
	answers := map[string][]*catalog.Tool{
		"hit":  tools("a", "b"),
		"late": tools("a", "b", "b", "c", "d", "e", "f", "g"), // b twice: g is seventh distinct
		"none": tools("a", "b", "c", "d", "e", "f"),
	}
	r := Run(queries, 0, 0, func(q string) ([]*catalog.Tool, error) { return answers[q], nil })
	want := []Miss{
		{ID: "late", Query: "late", Relevant: []Ranked{{"a", 1}, {"g", 7}}, Top: []string{"a", "b", "c", "d", "e"}},
		{ID: "none", Query: "none", Relevant: []Ranked{{"z", 0}}, Top: []string{"a", "b", "c", "d", "e"}},
	}
	if !reflect.DeepEqual(r.Misses, want) {
		t.Errorf("misses\n%+v\nwant\n%+v", r.Misses, want)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queries.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadQueries(t *testing.T) {
	qs, err := ReadQueries("testdata/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{ID: "1", Query: "create an issue", Relevant: []string{"create_issue"}},
		{ID: "2", Query: "weather in Paris", Relevant: []string{"get_forecast", "get_alerts"}},
		{Query: "no id is fine", Relevant: []string{"x"}},
		{ID: "crlf", Query: "windows line end", Relevant: []string{"y"}},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("ReadQueries =\n%+v\nwant\n%+v", qs, want)
	}
	for _, set := range []string{"livemcpbench", "bfcl"} {
		qs, err := ReadQueries("../../bench/" + set + "/queries.jsonl")
		if err != nil || len(qs) < 90 {
			t.Errorf("%s: %d queries, %v", set, len(qs), err)
		}
	}
}

func TestReadQueriesErrors(t *testing.T) {
	const good = `{"id": "1", "query": "q", "relevant": ["a"]}` + "\n"
	tests := []struct {
		name    string
		content string
		message string // the error is path + ":" + line + ": " + message
		line    string
	}{
		{"not JSON", good + "{not json}\n", "not a query object", "2"},
		{"truncated", good + good + `{"query": "q", "relevant": ["a"]` + "\n", "not a query object", "3"},
		{"a JSON array", "[1, 2]\n", "not a query object", "1"},
		{"wrong field type", good + `{"query": 5, "relevant": ["a"]}` + "\n", "not a query object", "2"},
		{"relevant is a string", `{"query": "q", "relevant": "a"}` + "\n", "not a query object", "1"},
		{"no query", good + `{"id": "2", "relevant": ["a"]}` + "\n", `a query needs a non-empty "query" and "relevant"`, "2"},
		{"empty query", `{"query": "", "relevant": ["a"]}` + "\n", `non-empty "query"`, "1"},
		{"no relevant", good + "\n" + `{"query": "q"}` + "\n", `non-empty "query" and "relevant"`, "3"}, // blank lines count
		{"empty relevant", `{"query": "q", "relevant": []}`, `non-empty "query" and "relevant"`, "1"},
		{"null relevant", `{"query": "q", "relevant": null}`, `"relevant"`, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			qs, err := ReadQueries(path)
			if err == nil {
				t.Fatalf("no error; read %+v", qs)
			}
			if qs != nil {
				t.Errorf("queries %+v alongside an error", qs)
			}
			prefix := path + ":" + tc.line + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q, want %q then %q", err, prefix, tc.message)
			}
		})
	}
	if _, err := ReadQueries(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if qs, err := ReadQueries(writeFile(t, "")); err != nil || len(qs) != 0 {
		t.Errorf("empty file: %v, %v", qs, err)
	}
}
