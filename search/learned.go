package search

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/gloss"
	"github.com/toolshed/toolshed/searchlog/record"
)

// Evidence is a query that found a tool its session then called with success: the
// search log's record (package searchlog/record, which has no dependency, so the core
// links no database driver). Tool may also be a bare name that one server offers; a
// hashed query ("sha256:…") or an empty one (query logging off) says nothing about the
// tool and is skipped.
type Evidence = record.Evidence

// WithEvidence returns an index over the same catalog whose tools also have a learned
// field: the queries that led to their successful calls, so that a request phrased the
// way earlier requests for a tool were finds it even when the tool's own words differ.
// ix is not changed. The field is one of BM25F's fields, with its own weight
// (Params.Learned) and length normalization (Params.LearnedB); each tool keeps at most
// Params.LearnedPerTool distinct queries, the weightiest, and a query's weight halves
// with every Params.LearnedHalfLife since its last use before now.
//
// Evidence for tools the catalog no longer has, and empty or hashed queries, are
// skipped. Without usable evidence, or with Params.Learned 0, it returns ix itself: the
// field costs nothing until the log has data. Rebuilding costs about a copy of the
// index's posting lists; do it when the index or the evidence changes, not per search,
// and on an index built from the catalog (NewIndex, Cache.Index): on one that already
// has evidence, the two fields would add up.
func (ix *Index) WithEvidence(evidence []Evidence, now time.Time) *Index {
	p := &ix.params
	if p.Learned <= 0 || len(evidence) == 0 {
		return ix
	}
	fields := ix.learnedQueries(evidence, now)
	if len(fields) == 0 {
		return ix
	}
	return ix.withLearned(fields)
}

// learnedQuery is one distinct query of a tool's learned field and its weight.
type learnedQuery struct {
	doc    int32
	text   string // normalized: lowercase, single spaces
	count  int
	last   time.Time
	weight float64
}

// learnedQueries resolves, merges, weighs and bounds the evidence: per tool, in catalog
// order, its kept queries, weightiest first.
func (ix *Index) learnedQueries(evidence []Evidence, now time.Time) [][]learnedQuery {
	p := &ix.params
	type key struct {
		doc  int32
		text string
	}
	merged := map[key]*learnedQuery{}
	var all []*learnedQuery
	for _, e := range evidence {
		text := strings.Join(strings.Fields(strings.ToLower(e.Query)), " ")
		if text == "" || strings.HasPrefix(text, "sha256:") {
			continue
		}
		t, err := ix.snap.Lookup(e.Tool, nil)
		if err != nil {
			continue // a tool the catalog no longer has, or an ambiguous bare name
		}
		k := key{int32(t.Index), text}
		q := merged[k]
		if q == nil {
			q = &learnedQuery{doc: k.doc, text: text}
			merged[k] = q
			all = append(all, q)
		}
		q.count += max(e.Count, 1)
		if e.Last.After(q.last) {
			q.last = e.Last
		}
	}
	if len(all) == 0 {
		return nil
	}
	byTool := make([][]learnedQuery, ix.snap.Len())
	for _, q := range all {
		q.weight = 1 + math.Log(float64(q.count))
		if age := now.Sub(q.last); p.LearnedHalfLife > 0 && age > 0 {
			q.weight *= math.Exp2(-float64(age) / float64(p.LearnedHalfLife))
		}
		byTool[q.doc] = append(byTool[q.doc], *q)
	}
	for d, qs := range byTool {
		// Weightiest first; equal weights in text order, so the field does not depend
		// on the order of the evidence.
		slices.SortFunc(qs, func(a, b learnedQuery) int {
			if c := cmp.Compare(b.weight, a.weight); c != 0 {
				return c
			}
			return strings.Compare(a.text, b.text)
		})
		if p.LearnedPerTool > 0 && len(qs) > p.LearnedPerTool {
			byTool[d] = qs[:p.LearnedPerTool]
		}
	}
	return byTool
}

// learnedPosting is a term of a tool's learned field and its weighted frequency there.
type learnedPosting struct {
	term, doc int32
	tf        float64
}

// withLearned makes the index with the learned fields of byTool: the queries are
// analyzed as a query is, each distinct term of a query adding the query's weight,
// normalized for the query's length, to the term's frequency in the field; words no
// tool uses become new terms.
func (ix *Index) withLearned(byTool [][]learnedQuery) *Index {
	p := &ix.params
	terms := ix.terms.clone()
	termText := slices.Clip(ix.termText) // new terms are appended to a copy
	termOf := func(tok []byte, h uint64) (int32, bool) {
		if id, ok := ix.surfaces.lookup(h); ok {
			return id, id >= 0 // -1: a stop word
		}
		st := stemOf(tok, h)
		if st.text == "" {
			return 0, false
		}
		slot, seen := terms.find(st.hash)
		if !seen {
			slot.id = int32(len(termText))
			termText = append(termText, st.text)
		}
		// Terms are told apart by hash, as in the build; a word whose hash collides
		// with another term is left out rather than taken for it.
		return slot.id, termText[slot.id] == st.text
	}

	// First each query's distinct terms, all queries' terms in one list.
	var (
		qterms []int32 // the terms of every query, one query after another
		qend   []int   // per query, where its terms end in qterms
		buf    []byte
	)
	for _, qs := range byTool {
		for _, q := range qs {
			from := len(qterms)
			emit := func(tok []byte, h uint64) {
				if id, ok := termOf(tok, h); ok && !slices.Contains(qterms[from:], id) {
					qterms = append(qterms, id)
				}
			}
			buf = tokenize(q.text, buf, emit)
			// A request in Chinese also asks in English, as at search time.
			if gl := gloss.Append(nil, q.text); len(gl) > 0 {
				buf = tokenize(string(gl), buf, emit)
			}
			qend = append(qend, len(qterms))
		}
	}
	if len(qterms) == 0 {
		return ix
	}
	// Length normalization is per query, against the average query: a long request
	// says less about the tool with each of its words. The number of queries is not
	// normalized away: more queries that led to a tool are more evidence, and BM25's
	// saturation already keeps a word said by many of them from counting without end.
	avg := float64(len(qterms)) / float64(len(qend))
	learned := make([]learnedPosting, 0, len(qterms)) // at most one a query term
	tf := map[int32]float64{}
	qi, from := 0, 0
	for d, qs := range byTool {
		clear(tf)
		for _, q := range qs {
			ids := qterms[from:qend[qi]]
			from = qend[qi]
			qi++
			f := q.weight * p.Learned / (1 - p.LearnedB + p.LearnedB*float64(len(ids))/avg)
			for _, id := range ids {
				tf[id] += f
			}
		}
		for id, f := range tf {
			learned = append(learned, learnedPosting{term: id, doc: int32(d), tf: f})
		}
	}
	return ix.merged(learned, terms, termText)
}

// merged returns a new index: ix's posting lists with the learned postings, which
// come in tool order, merged in. A (term, tool) pair that the tool's own text already has
// gets BM25F's score of the two frequencies added, recovered from the saturated score
// the build stored; the other pairs are copied as they are. Terms whose number of
// tools changed get their idf and largest score again.
func (ix *Index) merged(learned []learnedPosting, terms *termTable, termText []string) *Index {
	k1 := ix.params.K1
	nt, ntOld := len(termText), len(ix.termText)
	oldLen := func(t int) int32 {
		if t >= ntOld {
			return 0
		}
		return ix.postStart[t+1] - ix.postStart[t]
	}
	oldDocs := func(t int) []int32 {
		if t >= ntOld {
			return nil
		}
		return ix.postDoc[ix.postStart[t]:ix.postStart[t+1]]
	}
	// The learned postings of term t are byTerm[at[t]:at[t+1]]: learned, which comes
	// in tool order, put in order of term by counting, so each term's stay in tool order.
	at := make([]int32, nt+1)
	for _, e := range learned {
		at[e.term+1]++
	}
	for t := range nt {
		at[t+1] += at[t]
	}
	byTerm := make([]learnedPosting, len(learned))
	next := slices.Clone(at[:nt])
	for _, e := range learned {
		byTerm[next[e.term]] = e
		next[e.term]++
	}
	learned = byTerm
	// New lengths: the old list plus the learned tools it lacks.
	postStart := make([]int32, nt+1)
	for t := range nt {
		n := oldLen(t)
		docs := oldDocs(t)
		for _, e := range learned[at[t]:at[t+1]] {
			if _, found := slices.BinarySearch(docs, e.doc); !found {
				n++
			}
		}
		postStart[t+1] = postStart[t] + n
	}
	postDoc := make([]int32, postStart[nt])
	postScore := make([]float32, postStart[nt])
	idf := make([]float32, nt)
	maxScore := make([]float32, nt)
	copy(idf, ix.idf)
	copy(maxScore, ix.maxScore)
	saturate := func(tf float64) float32 { return float32(tf * (k1 + 1) / (tf + k1)) }
	n := float64(ix.snap.Len())
	for t := 0; t < nt; {
		if at[t] == at[t+1] {
			// A run of terms without learned postings: one copy, and their idf and
			// largest scores stand.
			end := t + 1
			for end < ntOld && at[end] == at[end+1] {
				end++
			}
			end = min(end, ntOld)
			copy(postDoc[postStart[t]:postStart[end]], ix.postDoc[ix.postStart[t]:ix.postStart[end]])
			copy(postScore[postStart[t]:postStart[end]], ix.postScore[ix.postStart[t]:ix.postStart[end]])
			t = end
			continue
		}
		docs, scores := oldDocs(t), []float32(nil)
		if t < ntOld {
			scores = ix.postScore[ix.postStart[t]:ix.postStart[t+1]]
		}
		out := postStart[t]
		i := 0
		best := float32(0)
		put := func(d int32, sc float32) {
			postDoc[out], postScore[out] = d, sc
			out++
			best = max(best, sc)
		}
		for _, e := range learned[at[t]:at[t+1]] {
			for i < len(docs) && docs[i] < e.doc {
				put(docs[i], scores[i])
				i++
			}
			tf := e.tf
			if i < len(docs) && docs[i] == e.doc {
				// The build stored s = tf(k1+1)/(tf+k1); tf = k1·s/(k1+1−s).
				s := float64(scores[i])
				tf += k1 * s / (k1 + 1 - s)
				i++
			}
			put(e.doc, saturate(tf))
		}
		for ; i < len(docs); i++ {
			put(docs[i], scores[i])
		}
		c := float64(postStart[t+1] - postStart[t])
		idf[t] = float32(math.Log(1 + (n-c+0.5)/(c+0.5)))
		maxScore[t] = best
		t++
	}
	return &Index{
		snap:      ix.snap,
		params:    ix.params,
		terms:     terms,
		surfaces:  ix.surfaces,
		coords:    ix.coords,
		termText:  termText,
		idf:       idf,
		postStart: postStart,
		postDoc:   postDoc,
		postScore: postScore,
		maxScore:  maxScore,
		exact:     ix.exact,
		grams:     ix.grams,
	}
}
