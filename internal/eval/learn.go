package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// LearnSeeds are the seeds of the random splits RunLearned measures over: fixed, so that
// two runs, and two versions of the ranking, are measured on the same splits.
var LearnSeeds = []uint64{1, 2, 3}

// ErrSplit means a learn-split share that leaves one of the halves empty.
var ErrSplit = errors.New("the learn split must be between 0 and 1, such as 0.5")

// Split divides queries at random, with seed, into the log, the share frac of them
// (rounded), and the rest, which are measured; each keeps the order of queries. The
// same queries and seed give the same split.
func Split(queries []Query, frac float64, seed uint64) (log, measured []Query) {
	n := len(queries)
	k := int(math.Round(frac * float64(n)))
	inLog := make([]bool, n)
	for _, i := range rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Perm(n)[:k] {
		inLog[i] = true
	}
	for i, q := range queries {
		if inLog[i] {
			log = append(log, q)
		} else {
			measured = append(measured, q)
		}
	}
	return log, measured
}

// Evidence returns the queries of a log that stand for a search followed by a successful
// call of one tool: those with exactly one relevant tool. A query that needs several
// tools says nothing about which of them its words describe, so it is not evidence.
func Evidence(log []Query) []Query {
	var ev []Query
	for _, q := range log {
		if len(q.Relevant) == 1 {
			ev = append(ev, q)
		}
	}
	return ev
}

// LearnReport holds the figures of RunLearned: recall@5 of the measured halves without
// and with the learned field, averaged over the splits, and each split's.
type LearnReport struct {
	Share          float64      `json:"learn_split"`
	Tools          int          `json:"tools"`
	Queries        int          `json:"queries"`
	Recall5        float64      `json:"recall@5"`
	LearnedRecall5 float64      `json:"learned_recall@5"`
	Splits         []SplitStats `json:"splits"`
}

// SplitStats are one split's figures.
type SplitStats struct {
	Seed uint64 `json:"seed"`
	// Log is how many queries became the log, Evidence how many of them had one
	// relevant tool, and Measured how many were measured.
	Log            int     `json:"log"`
	Evidence       int     `json:"evidence"`
	Measured       int     `json:"measured"`
	Recall5        float64 `json:"recall@5"`
	LearnedRecall5 float64 `json:"learned_recall@5"`
}

// RunLearned measures what learning from a search log adds: for each seed, it splits
// queries (see Split), and scores the measured half with search(nil), the search without
// a learned field, and with search(evidence), the search whose learned field holds the
// log's evidence (see Evidence). No seeds means LearnSeeds.
func RunLearned(queries []Query, tools int, frac float64, seeds []uint64, search func(evidence []Query) SearchFunc) (LearnReport, error) {
	if !(frac > 0 && frac < 1) {
		return LearnReport{}, fmt.Errorf("%w (got %g)", ErrSplit, frac)
	}
	if len(seeds) == 0 {
		seeds = LearnSeeds
	}
	r := LearnReport{Share: frac, Tools: tools, Queries: len(queries)}
	base := search(nil)
	for _, seed := range seeds {
		log, measured := Split(queries, frac, seed)
		if len(log) == 0 || len(measured) == 0 {
			return LearnReport{}, fmt.Errorf("%w: %g of %d queries leaves a half empty", ErrSplit, frac, len(queries))
		}
		ev := Evidence(log)
		s := SplitStats{Seed: seed, Log: len(log), Evidence: len(ev), Measured: len(measured)}
		s.Recall5 = Run(measured, tools, 0, base).Recall5
		s.LearnedRecall5 = Run(measured, tools, 0, search(ev)).Recall5
		r.Recall5 += s.Recall5 / float64(len(seeds))
		r.LearnedRecall5 += s.LearnedRecall5 / float64(len(seeds))
		r.Splits = append(r.Splits, s)
	}
	return r, nil
}
