package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/eval"
	"github.com/toolshed/toolshed/internal/evalsearch"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/search"
)

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "the benchmark set's catalog `FILE` (repeatable; required)")
	queries := fs.String("queries", "", "the benchmark set's queries `FILE`: JSON lines of {\"id\", \"query\", \"relevant\"} (required)")
	asJSON := fs.Bool("json", false, "print JSON")
	misses := fs.Bool("misses", false, "also list the queries whose first 5 results lack a relevant tool, with where the relevant ones ranked")
	emb := addEmbedFlags(fs, interactiveQueryTimeout)
	grams := fs.Float64("grams", 0, "rescore BM25F's first results by character 4-grams at this `WEIGHT` (such as 0.1; 0, the default, is off): measures on your catalog what bench/README.md measured on the dev sets")
	learnSplit := fs.Float64("learn-split", 0, "replay a search log: over three random splits, this `SHARE` of the queries (such as 0.5) is the log, and recall@5 of the rest is reported without and with the learned field")
	fs.Usage = func() {
		printUsage(stdout, fs, "--catalog FILE... --queries FILE [--json] [--misses | --learn-split SHARE] [--grams WEIGHT] "+embedSynopsis,
			"Measures retrieval on a benchmark set (format in bench/README.md): recall@1/5/10, nDCG@5/10, comp@5, MRR, search latency and index build time. "+
				"For example: toolshed eval --catalog bench/bfcl/catalog.json --queries bench/bfcl/queries.jsonl")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if len(catalogs) == 0 || *queries == "" {
		return usageErr("give both --catalog FILE and --queries FILE (see bench/README.md for the format)")
	}
	learn := false
	fs.Visit(func(f *flag.Flag) { learn = learn || f.Name == "learn-split" })
	if learn && *misses {
		return usageErr("--misses lists the misses of one run; leave it out with --learn-split")
	}
	if learn && !(*learnSplit > 0 && *learnSplit < 1) {
		return usageErr(fmt.Sprintf("--learn-split is the share of the queries that becomes the log, between 0 and 1 such as 0.5 (got %g)", *learnSplit))
	}
	if *grams < 0 || *grams > 10 {
		return usageErr(fmt.Sprintf("--grams is the 4-grams' weight, from 0 (off) to 10, such as 0.1 (got %g)", *grams))
	}
	hybridOn, err := emb.on()
	if err != nil {
		return err
	}
	if hybridOn && learn {
		return usageErr("--learn-split measures the search log's learning with words alone; leave out --embed-url with it")
	}
	qs, err := eval.ReadQueries(*queries)
	if err != nil {
		return err
	}
	snap, err := loadCatalog(catalogs, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	params := search.DefaultParams
	params.Grams = *grams
	ix := search.NewIndexParams(snap, params)
	build := time.Since(start)
	if learn {
		return runLearned(stdout, ix, qs, *learnSplit, *asJSON)
	}
	searchFn := evalsearch.Search(ix)
	mode := evalMode{Mode: "bm25", Grams: *grams}
	var hs *hybrid.Searcher
	if hybridOn {
		// Measuring needs the vectors: an endpoint that fails here is an error, not a
		// silent fall back to the figures of words alone.
		var st embed.BuildStats
		if hs, st, err = emb.searcher(ix, stderr); err != nil {
			return fmt.Errorf("embedding the catalog's tools: %w", err)
		}
		searchFn = evalsearch.Hybrid(hs)
		mode = evalMode{Mode: "hybrid", Grams: *grams, Model: *emb.model, Host: urlHost(*emb.url), Embedded: st.Embedded, Cached: st.Cached}
	}
	r := eval.Run(qs, snap.Len(), build, searchFn)
	if !*misses {
		r.Misses = nil
	}
	var sides *sideBySide
	if hs != nil {
		mode.Fallbacks = hs.Fallbacks()
		// Words alone and vectors alone beside the fusion, so a user sees whether the
		// model helps on this catalog.
		words, vectors := eval.Run(qs, snap.Len(), build, evalsearch.Search(ix)), eval.Run(qs, snap.Len(), build, evalsearch.Vectors(hs))
		sides = &sideBySide{Words: figuresOf(words), Vectors: figuresOf(vectors), Hybrid: figuresOf(r), VectorErrors: vectors.Errors}
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			eval.Report
			Search     evalMode    `json:"search"`
			SideBySide *sideBySide `json:"side_by_side,omitempty"`
		}{r, mode, sides})
	}
	fmt.Fprintf(stdout, "%d queries over %d tools (index built in %.1f ms)\n", r.Queries, r.Tools, r.BuildMS)
	fmt.Fprintln(stdout, mode.String(r.Queries))
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "  recall@1   %.3f\n  recall@5   %.3f\n  recall@10  %.3f\n", r.Recall1, r.Recall5, r.Recall10)
	fmt.Fprintf(stdout, "  nDCG@5     %.3f\n  nDCG@10    %.3f\n  comp@5     %.3f\n  MRR        %.3f\n", r.NDCG5, r.NDCG10, r.Comp5, r.MRR)
	fmt.Fprintf(stdout, "  search     p50 %.0f µs, p99 %.0f µs\n", r.P50us, r.P99us)
	if r.Errors > 0 {
		fmt.Fprintf(stdout, "  errors     %d queries failed and scored 0\n", r.Errors)
	}
	if sides != nil {
		sides.print(stdout)
	}
	if *misses {
		printMisses(stdout, r)
	}
	return nil
}

// figures are the headline figures of one ranking.
type figures struct {
	Recall5 float64 `json:"recall@5"`
	NDCG5   float64 `json:"nDCG@5"`
	MRR     float64 `json:"MRR"`
}

func figuresOf(r eval.Report) figures { return figures{r.Recall5, r.NDCG5, r.MRR} }

// sideBySide is an eval of hybrid search with its two parts measured alone.
type sideBySide struct {
	Words, Vectors, Hybrid figures
	// VectorErrors counts the queries the vectors alone could not rank (the query's
	// embedding failed): they scored 0 there.
	VectorErrors int `json:"vector_errors"`
}

func (s *sideBySide) print(w io.Writer) {
	fmt.Fprintf(w, "\n  side by side   words  vectors  hybrid\n")
	row := func(name string, f func(figures) float64) {
		fmt.Fprintf(w, "  %-12s  %5.3f  %7.3f  %6.3f\n", name, f(s.Words), f(s.Vectors), f(s.Hybrid))
	}
	row("recall@5", func(f figures) float64 { return f.Recall5 })
	row("nDCG@5", func(f figures) float64 { return f.NDCG5 })
	row("MRR", func(f figures) float64 { return f.MRR })
	switch d := s.Hybrid.Recall5 - s.Words.Recall5; {
	case d > 0.0005:
		fmt.Fprintf(w, "  the model helps here: hybrid %+.1f points of recall@5 over words alone\n", 100*d)
	case d < -0.0005:
		fmt.Fprintf(w, "  the model hurts here: hybrid %+.1f points of recall@5 against words alone; search without it\n", 100*d)
	default:
		fmt.Fprintf(w, "  the model changes nothing here in recall@5\n")
	}
	if s.VectorErrors > 0 {
		fmt.Fprintf(w, "  (%d queries could not be embedded for the vectors alone, and scored 0 there)\n", s.VectorErrors)
	}
}

// runLearned prints eval.RunLearned's figures (see evalsearch.Learned).
func runLearned(w io.Writer, ix *search.Index, qs []eval.Query, share float64, asJSON bool) error {
	r, err := eval.RunLearned(qs, ix.Snapshot().Len(), share, eval.LearnSeeds, evalsearch.Learned(ix, time.Now()))
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, r)
	}
	fmt.Fprintf(w, "%d queries over %d tools; %s of them are the log, the rest measured, over %d random splits\n\n", r.Queries, r.Tools, percent.Text(r.Share*100), len(r.Splits))
	fmt.Fprintf(w, "  seed   log  evidence  measured  recall@5  learned_recall@5\n")
	for _, s := range r.Splits {
		fmt.Fprintf(w, "  %4d  %4d  %8d  %8d  %8.3f  %16.3f\n", s.Seed, s.Log, s.Evidence, s.Measured, s.Recall5, s.LearnedRecall5)
	}
	fmt.Fprintf(w, "  mean  %34.3f  %16.3f  (%+.1f points)\n", r.Recall5, r.LearnedRecall5, 100*(r.LearnedRecall5-r.Recall5))
	return nil
}

// printMisses lists the queries that missed a relevant tool in their first five results:
// each relevant tool with its rank (- when not in the first 50), then what came first.
func printMisses(w io.Writer, r eval.Report) {
	fmt.Fprintf(w, "\n%d of %d queries miss a relevant tool in their first 5 results:\n", len(r.Misses), r.Queries)
	for _, m := range r.Misses {
		q := strings.Join(strings.Fields(m.Query), " ")
		if short := search.Truncate(q, 100); short != q {
			q = short + " …"
		}
		fmt.Fprintf(w, "\n  %s  %s\n", m.ID, q)
		var want []string
		for _, rel := range m.Relevant {
			rank := "-"
			if rel.Rank > 0 {
				rank = fmt.Sprint(rel.Rank)
			}
			want = append(want, fmt.Sprintf("%s (%s)", rel.Name, rank))
		}
		fmt.Fprintf(w, "    wanted  %s\n", strings.Join(want, ", "))
		if m.Error != "" {
			fmt.Fprintf(w, "    failed  %s\n", m.Error)
		} else {
			fmt.Fprintf(w, "    got     %s\n", strings.Join(m.Top, ", "))
		}
	}
}

// evalMode says what an eval measured: words alone, or words fused with which model,
// and how many queries fell back to words alone because their embedding failed (then
// the figures are partly of words).
type evalMode struct {
	Mode      string `json:"mode"` // "bm25" or "hybrid"
	Model     string `json:"model,omitempty"`
	Host      string `json:"endpoint_host,omitempty"`
	Embedded  int    `json:"tools_embedded"`
	Cached    int    `json:"tools_cached"`
	Fallbacks int64  `json:"query_fallbacks"`
	// Grams is the 4-grams' weight (--grams); 0 when off.
	Grams float64 `json:"grams,omitempty"`
}

func (m evalMode) String(queries int) string {
	bm25 := "BM25F"
	if m.Grams > 0 {
		bm25 = fmt.Sprintf("BM25F with 4-grams at %g", m.Grams)
	}
	if m.Mode != "hybrid" {
		return "search: words alone (" + bm25 + "); add --embed-url and --embed-model to measure hybrid search"
	}
	s := fmt.Sprintf("hybrid: %s fused with %s at %s (%d tools embedded, %d from the cache)", bm25, m.Model, m.Host, m.Embedded, m.Cached)
	if m.Fallbacks > 0 {
		s += fmt.Sprintf("; %d of %d queries fell back to words alone (their embedding failed)", m.Fallbacks, queries)
	}
	return s
}

// urlHost is the host (and port) of an endpoint URL, which says where the model ran
// without what a path or query might carry.
func urlHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "?"
}
