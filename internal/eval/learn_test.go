package eval

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// numbered returns n queries q0, q1, …; every third one needs two tools.
func numbered(n int) []Query {
	qs := make([]Query, n)
	for i := range qs {
		qs[i] = Query{ID: fmt.Sprint("q", i), Query: fmt.Sprint("query ", i), Relevant: []string{fmt.Sprint("t", i)}}
		if i%3 == 0 {
			qs[i].Relevant = append(qs[i].Relevant, "shared")
		}
	}
	return qs
}

func ids(qs []Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

func TestSplit(t *testing.T) {
	qs := numbered(101)
	tests := []struct {
		frac    float64
		wantLog int
	}{
		{0.5, 51}, // 50.5 rounds up
		{0.25, 25},
		{0.9, 91},
		{0.001, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.frac), func(t *testing.T) {
			for _, seed := range LearnSeeds {
				log, measured := Split(qs, tc.frac, seed)
				if len(log) != tc.wantLog || len(log)+len(measured) != len(qs) {
					t.Fatalf("seed %d: %d in the log and %d measured, want %d of %d in the log", seed, len(log), len(measured), tc.wantLog, len(qs))
				}
				// No query in both halves, every query in one, each half in file order.
				all := append(ids(log), ids(measured)...)
				slices.Sort(all)
				want := ids(qs)
				slices.Sort(want)
				if !slices.Equal(all, want) {
					t.Errorf("seed %d: the halves are not a partition of the queries", seed)
				}
				for _, half := range [][]Query{log, measured} {
					pos := func(q Query) int { return slices.IndexFunc(qs, func(x Query) bool { return x.ID == q.ID }) }
					if !slices.IsSortedFunc(half, func(a, b Query) int { return pos(a) - pos(b) }) {
						t.Errorf("seed %d: a half is not in the order of the queries", seed)
					}
				}
				// The same seed gives the same split.
				log2, measured2 := Split(qs, tc.frac, seed)
				if !reflect.DeepEqual(log, log2) || !reflect.DeepEqual(measured, measured2) {
					t.Errorf("seed %d: two splits differ", seed)
				}
			}
		})
	}
	// Different seeds give different splits.
	a, _ := Split(qs, 0.5, 1)
	b, _ := Split(qs, 0.5, 2)
	if reflect.DeepEqual(ids(a), ids(b)) {
		t.Errorf("seeds 1 and 2 split alike: %v", ids(a))
	}
	// Pinned: a change of generator would change every published figure.
	if got := ids(a)[:5]; !slices.Equal(got, []string{"q0", "q1", "q2", "q5", "q10"}) {
		t.Errorf("seed 1's log starts %v", got)
	}
}

func TestEvidence(t *testing.T) {
	qs := numbered(9)
	got := Evidence(qs)
	if want := []string{"q1", "q2", "q4", "q5", "q7", "q8"}; !slices.Equal(ids(got), want) {
		t.Errorf("evidence %v, want the single-tool queries %v", ids(got), want)
	}
	if len(Evidence(nil)) != 0 {
		t.Error("evidence from an empty log")
	}
}

func TestRunLearned(t *testing.T) {
	qs := numbered(40)
	// The search finds a query's first relevant tool only when the log holds a query
	// with that tool: t<i> for query i, so never, except "shared" below; without a
	// log it finds nothing.
	var logs [][]Query
	search := func(ev []Query) SearchFunc {
		logs = append(logs, ev)
		known := map[string]bool{}
		for _, q := range ev {
			if len(q.Relevant) != 1 {
				t.Errorf("evidence %s has %d relevant tools", q.ID, len(q.Relevant))
			}
			known[q.Relevant[0]] = true
		}
		return func(query string) ([]*catalog.Tool, error) {
			var i int
			fmt.Sscanf(query, "query %d", &i)
			if known[fmt.Sprint("t", i)] {
				return tools(fmt.Sprint("t", i)), nil
			}
			if ev != nil {
				return tools("shared"), nil
			}
			return nil, nil
		}
	}
	r, err := RunLearned(qs, 7, 0.5, nil, search)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1+len(LearnSeeds) || logs[0] != nil {
		t.Fatalf("search built %d times (the first with %d evidence), want once without a log and once per seed", len(logs), len(logs[0]))
	}
	if r.Share != 0.5 || r.Tools != 7 || r.Queries != 40 || len(r.Splits) != len(LearnSeeds) {
		t.Errorf("report %+v", r)
	}
	sum := 0.0
	for i, s := range r.Splits {
		log, measured := Split(qs, 0.5, LearnSeeds[i])
		if s.Seed != LearnSeeds[i] || s.Log != len(log) || s.Measured != len(measured) || s.Evidence != len(Evidence(log)) {
			t.Errorf("split %d: %+v", i, s)
		}
		// No measured query is in the log, so its own tool is never learned; the
		// learned search answers "shared", half of each multi-tool query.
		multi := 0
		for _, q := range measured {
			if len(q.Relevant) == 2 {
				multi++
			}
		}
		if want := 0.5 * float64(multi) / float64(len(measured)); s.Recall5 != 0 || !near(s.LearnedRecall5, want) {
			t.Errorf("split %d: recall@5 %.3f → %.3f, want 0 → %.3f", i, s.Recall5, s.LearnedRecall5, want)
		}
		sum += s.LearnedRecall5
	}
	if !near(r.LearnedRecall5, sum/float64(len(r.Splits))) || r.Recall5 != 0 {
		t.Errorf("means %.3f → %.3f", r.Recall5, r.LearnedRecall5)
	}
	for _, frac := range []float64{0, 1, -0.5, 2} {
		if _, err := RunLearned(qs, 7, frac, nil, search); !errors.Is(err, ErrSplit) {
			t.Errorf("share %g: err %v, want ErrSplit", frac, err)
		}
	}
	if _, err := RunLearned(qs[:1], 7, 0.5, nil, search); !errors.Is(err, ErrSplit) {
		t.Errorf("one query: err %v, want ErrSplit", err)
	}
}
