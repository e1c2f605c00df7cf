package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/search"
)

// searchOutput is the --json form of a search.
type searchOutput struct {
	Query   string         `json:"query"`
	Mode    string         `json:"mode"`
	Tools   int            `json:"tools"`
	Results []searchResult `json:"results"`
}

type searchResult struct {
	Name        string   `json:"name"`
	Server      string   `json:"server"`
	Tool        string   `json:"tool"`
	Description string   `json:"description"`
	Required    []string `json:"required"`
	Score       float64  `json:"score"`
	Match       string   `json:"match"`
	Field       string   `json:"field,omitempty"`
}

func runSearch(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "search the tools of catalog `FILE` (repeatable; default: the built-in catalog)")
	regex := fs.Bool("regex", false, "read QUERY as a regular expression, case-insensitive (Python re syntax, as far as RE2 shares it)")
	limit := fs.Int("limit", search.DefaultLimit, "print at most `N` results")
	asJSON := fs.Bool("json", false, "print JSON, with each result's score and how it matched")
	emb := addEmbedFlags(fs, interactiveQueryTimeout)
	fs.Usage = func() {
		printUsage(stdout, fs, "[--catalog FILE]... [--regex] [--limit N] [--json] "+embedSynopsis+" QUERY",
			"Ranks the catalog's tools for QUERY, words or (with --regex) a pattern, as tool_search does.")
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErr("give a QUERY, such as: toolshed search \"create a github issue\"")
	}
	if *limit < 1 {
		return usageErr("--limit must be at least 1, got %d", *limit)
	}
	hybridOn, err := emb.on()
	if err != nil {
		return err
	}
	if hybridOn && *regex {
		return usageErr("--regex matches patterns, not meanings; leave out --embed-url with it")
	}
	query := strings.Join(rest, " ")
	snap, err := loadCatalog(catalogs, stderr)
	if err != nil {
		return err
	}
	ix := search.NewIndex(snap)
	opts := search.Options{Limit: *limit}
	var results []search.Result
	mode := "bm25"
	if *regex {
		mode = "regex"
		results, err = ix.Regex(query, opts)
	} else if hybridOn {
		// An endpoint that is down or slow costs the vectors, never the search: the
		// query's vector is asked for first, within --embed-query-timeout, so that an
		// endpoint that does not answer costs no more than that before words answer; the
		// tools' embedding, which may take long and shows its progress, starts only once
		// the endpoint has answered.
		var hs *hybrid.Searcher
		qv, herr := emb.query(query)
		if herr == nil {
			hs, _, herr = emb.searcher(ix, stderr)
		}
		if herr != nil && !errors.Is(herr, errUsage) {
			fmt.Fprintf(stderr, "toolshed: no embeddings (%v); searching with words alone\n", herr)
			results, err = ix.Search(query, opts)
		} else if herr != nil {
			return herr
		} else {
			mode = "hybrid"
			results, err = hs.SearchVector(query, qv, opts)
		}
	} else {
		results, err = ix.Search(query, opts)
	}
	if err != nil {
		if *asJSON {
			if se, ok := err.(*search.Error); ok {
				writeJSON(stdout, map[string]string{"error": string(se.Code), "message": se.Message})
			}
		}
		return err
	}
	if *asJSON {
		out := searchOutput{Query: query, Mode: mode, Tools: snap.Len(), Results: []searchResult{}}
		for _, r := range results {
			out.Results = append(out.Results, searchResult{
				Name: r.Tool.Qualified, Server: r.Tool.Server, Tool: r.Tool.Name,
				Description: bridge.Snippet(r.Tool.Description, 200), Required: nonNil(r.Tool.Required),
				Score: roundScore(r.Score), Match: r.Match, Field: r.Field,
			})
		}
		return writeJSON(stdout, out)
	}
	if len(results) == 0 {
		fmt.Fprintf(stdout, "no tool matched %q among %d tools\n", query, snap.Len())
		return nil
	}
	// The fallbacks are guesses; say so, so a typo is not mistaken for a poor ranking.
	switch results[0].Match {
	case search.MatchSubstring:
		fmt.Fprintf(stdout, "no word of %q matched; tools whose names contain it:\n", query)
	case search.MatchFuzzy:
		fmt.Fprintf(stdout, "no word of %q matched; read as misspellings of words the tools use:\n", query)
	}
	for i, r := range results {
		fmt.Fprintf(stdout, "%2d. %s\n", i+1, r.Tool.Qualified)
		if d := bridge.Snippet(r.Tool.Description, 110); d != "" {
			fmt.Fprintf(stdout, "    %s\n", d)
		}
		if len(r.Tool.Required) > 0 {
			fmt.Fprintf(stdout, "    required: %s\n", strings.Join(r.Tool.Required, ", "))
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// roundScore keeps scores readable and stable in output: 4 decimals, and exact-name
// matches (infinite) as -1 since JSON has no infinity.
func roundScore(f float64) float64 {
	if f > 1e300 {
		return -1
	}
	return float64(int64(f*10000+0.5)) / 10000
}

// writeJSON prints v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
