package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/lint"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// minLogQueries is how many searches of the search log that led to a successful call
// lint needs to measure the embedding model with them; with fewer, the tools' own
// descriptions alone are used.
const minLogQueries = 20

// embedGain says whether the config's embedding model helps search on snap: recall@5 of
// words alone, of the vectors alone and of their fusion (what search uses) over the
// searches of the search log that found a tool then called with success, when there
// are enough of them, and over each tool's own description. A model that makes search
// worse is a warning: the user turned it on to search better.
func embedGain(ctx context.Context, e config.Embed, logDSN string, snap *catalog.Snapshot, stderr io.Writer) []lint.Finding {
	c, err := configEmbedClient(e)
	if err != nil {
		return nil // checkEmbed has said what is wrong
	}
	ix := search.NewIndex(snap)
	vecs, _, err := embed.Build(ctx, c, embed.ToolTexts(snap), embed.BuildOptions{Progress: embedProgress(stderr, e.Model), Warn: func(err error) { fmt.Fprintf(stderr, "toolshed: %v\n", err) }})
	if err != nil {
		return []lint.Finding{{Severity: lint.Warning, Check: lint.CheckEmbed,
			Message: fmt.Sprintf("the embedding model %s could not embed the catalog's tools, so its gain was not measured: %v", e.Model, err),
			Fix:     "make the endpoint answer for every tool (toolshed eval --embed-url shows the same), or turn embed off"}}
	}
	hs := hybrid.New(ix, vecs, c, hybrid.Options{QueryTimeout: embedProbeTimeout, Logger: slog.New(slog.DiscardHandler)})
	var parts []string
	worse := false
	measure := func(what string, qs []lint.SelfQuery) {
		w, v, h := recallAt5(ctx, ix, hs, qs)
		parts = append(parts, fmt.Sprintf("%s (%d): words %.3f, vectors %.3f, hybrid %.3f", what, len(qs), w, v, h))
		if h < w-0.0005 && !worse {
			worse = true
		}
	}
	logged := loggedQueries(ctx, logDSN, snap)
	if len(logged) >= minLogQueries {
		measure("searches of the search log that led to a call", logged)
	}
	self := lint.DescriptionQueries(snap)
	if len(self) == 0 {
		return nil
	}
	if len(logged) < minLogQueries {
		measure("the tools' own descriptions", self)
	}
	msg := fmt.Sprintf("recall@5 with the embedding model %s on this catalog, %s", e.Model, strings.Join(parts, "; "))
	if worse {
		return []lint.Finding{{Severity: lint.Warning, Check: lint.CheckEmbed,
			Message: msg + ": the model makes search worse than words alone here",
			Fix:     "try a stronger embedding model, or turn embed off; measure with toolshed eval --embed-url on queries of your own"}}
	}
	return []lint.Finding{{Severity: lint.Info, Check: lint.CheckEmbed, Message: msg + ": the model does not make search worse here",
		Fix: "nothing to fix; queries made of the tools' own words favour words, so measure with toolshed eval --embed-url on queries of your own"}}
}

// recallAt5 is the share of qs whose tool each ranking puts in its first 5: words
// alone, vectors alone, and their fusion.
func recallAt5(ctx context.Context, ix *search.Index, hs *hybrid.Searcher, qs []lint.SelfQuery) (words, vectors, fused float64) {
	in := func(found []search.Result, t *catalog.Tool) float64 {
		for _, r := range found {
			if r.Tool.Qualified == t.Qualified {
				return 1
			}
		}
		return 0
	}
	opts := search.Options{Limit: 5}
	for _, q := range qs {
		text := search.Shorten(q.Query, search.MaxQueryLen)
		w, _ := ix.Search(text, opts)
		v, _ := hs.SearchVectors(ctx, text, opts)
		h, _ := hs.Search(ctx, text, opts)
		words, vectors, fused = words+in(w, q.Tool), vectors+in(v, q.Tool), fused+in(h, q.Tool)
	}
	n := float64(len(qs))
	return words / n, vectors / n, fused / n
}

// loggedQueries returns the searches the search log at dsn ("" for the default file)
// recorded as leading to a successful call of a tool of snap, each query once per
// tool; none when there is no log.
func loggedQueries(ctx context.Context, dsn string, snap *catalog.Snapshot) []lint.SelfQuery {
	if dsn == "off" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	log, err := openLogFile(ctx, dsn)
	if err != nil {
		return nil // no log yet, or none that opens: the descriptions are measured instead
	}
	defer log.Close(context.Background())
	ev, err := log.Evidence(ctx, searchlog.EvidenceOptions{PerTool: 50})
	if err != nil {
		return nil
	}
	var out []lint.SelfQuery
	for _, e := range ev {
		if t, err := snap.Lookup(e.Tool, nil); err == nil && t.Qualified == e.Tool {
			out = append(out, lint.SelfQuery{Query: e.Query, Tool: t})
		}
	}
	return out
}
