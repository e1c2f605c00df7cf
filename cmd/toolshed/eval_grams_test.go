package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEvalGrams: --grams rescoring is measured by eval on the user's own set, says so,
// and ranks differently from words alone; a weight out of range is refused.
func TestEvalGrams(t *testing.T) {
	set := []string{"eval", "--catalog", "../../bench/restbench/catalog.json", "--queries", "../../bench/restbench/queries.jsonl", "--json"}
	measure := func(args ...string) (float64, map[string]any) {
		t.Helper()
		code, out, errOut := runArgs(append(set, args...)...)
		var r struct {
			Recall1 float64        `json:"recall@1"`
			Search  map[string]any `json:"search"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("eval %v: exit %d, stdout %.200q, stderr %q", args, code, out, errOut)
		}
		return r.Recall1, r.Search
	}
	plain, mode := measure()
	if _, ok := mode["grams"]; ok {
		t.Errorf("words alone reports grams: %v", mode)
	}
	rescored, mode := measure("--grams", "0.1")
	if mode["grams"] != 0.1 {
		t.Errorf("--grams 0.1 reports %v", mode)
	}
	if rescored == plain {
		t.Errorf("recall@1 is %.3f with and without 4-grams: the flag changed nothing", plain)
	}
	for _, bad := range []string{"-1", "11"} {
		if code, _, errOut := runArgs(append(set, "--grams", bad)...); code != 2 || !strings.Contains(errOut, "--grams is the 4-grams' weight") {
			t.Errorf("--grams %s: exit %d, stderr %q", bad, code, errOut)
		}
	}
}
