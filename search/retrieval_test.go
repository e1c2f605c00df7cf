package search_test

import (
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/eval"
	"github.com/toolshed/toolshed/internal/evalsearch"
	"github.com/toolshed/toolshed/search"
)

// TestRetrievalRegression measures retrieval on the real benchmark sets exactly as
// `toolshed eval` does, and fails if recall@5 falls below what the search achieves today.
func TestRetrievalRegression(t *testing.T) {
	tests := []struct {
		set        string
		minRecall5 float64
	}{
		{"livemcpbench", 0.45},
		{"bfcl", 0.87},
		{"apibench", 0.25},
		{"restbench", 0.49},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			qs, snap := benchSet(t, tc.set)
			ix := search.NewIndex(snap)
			r := eval.Run(qs, snap.Len(), time.Duration(0), evalsearch.Search(ix))
			t.Logf("%s: %d queries over %d tools: recall@1 %.3f recall@5 %.3f recall@10 %.3f nDCG@10 %.3f MRR %.3f",
				tc.set, r.Queries, r.Tools, r.Recall1, r.Recall5, r.Recall10, r.NDCG10, r.MRR)
			if r.Errors != 0 {
				t.Errorf("%d queries failed", r.Errors)
			}
			if r.Queries != len(qs) || r.Queries == 0 {
				t.Errorf("%d queries scored of %d", r.Queries, len(qs))
			}
			if r.Recall5 < tc.minRecall5 {
				t.Errorf("recall@5 = %.4f, below %.2f", r.Recall5, tc.minRecall5)
			}
			if !(r.Recall1 <= r.Recall5 && r.Recall5 <= r.Recall10) {
				t.Errorf("recall does not grow with k: %.3f %.3f %.3f", r.Recall1, r.Recall5, r.Recall10)
			}
		})
	}
}

// TestLearnedReplay replays half of each benchmark set's queries as a search log (see
// eval.RunLearned) and fails if the learned field costs any set more than half a point
// of recall@5, or if it no longer brings its gain (livemcpbench, and where requests recur
// over the same tools: bfcl, apibench).
func TestLearnedReplay(t *testing.T) {
	tests := []struct {
		set     string
		minGain float64
	}{
		{"livemcpbench", 0.01},
		{"bfcl", 0.01},
		{"apibench", 0.10},
		{"restbench", -0.005},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			qs, snap := benchSet(t, tc.set)
			ix := search.NewIndex(snap)
			r, err := eval.RunLearned(qs, snap.Len(), 0.5, eval.LearnSeeds, evalsearch.Learned(ix, time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: recall@5 %.3f without the learned field, %.3f with it", tc.set, r.Recall5, r.LearnedRecall5)
			if gain := r.LearnedRecall5 - r.Recall5; gain < tc.minGain {
				t.Errorf("the learned field changes recall@5 by %+.3f, below %+.3f", gain, tc.minGain)
			}
		})
	}
}

// benchSet loads the queries and catalog of a benchmark set of ../bench.
func benchSet(t *testing.T, set string) ([]eval.Query, *catalog.Snapshot) {
	t.Helper()
	return search.BenchSet(t, set)
}
