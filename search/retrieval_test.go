package search_test

import (
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/eval"
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
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			qs, err := eval.ReadQueries("../bench/" + tc.set + "/queries.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			snap, problems := catalog.LoadFiles("../bench/" + tc.set + "/catalog.json")
			if len(problems) != 0 {
				t.Fatal(problems)
			}
			ix := search.NewIndex(snap)
			r := eval.Run(qs, snap.Len(), time.Duration(0), func(q string) ([]*catalog.Tool, error) {
				found, err := ix.Search(search.Shorten(q, search.MaxQueryLen), search.Options{Limit: eval.Depth})
				tools := make([]*catalog.Tool, len(found))
				for i, f := range found {
					tools[i] = f.Tool
				}
				return tools, err
			})
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
