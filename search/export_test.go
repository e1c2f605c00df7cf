package search

import (
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/eval"
)

// ResetCaches empties the process-wide stem caches, so that a benchmark measures a cold
// build.
var ResetCaches = resetCaches

// KeptBytes returns the live heap that what build returns keeps (see keptBytes).
var KeptBytes = keptBytes

// RegexNeed returns the literal text every match of pattern contains (see literals).
func RegexNeed(pattern string) ([][]string, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return c.need, nil
}

// RegexWith is Index.Regex, with the trigram index built and used (useTrigrams) or not
// used at all, where Regex uses it only once a background build is done.
func RegexWith(ix *Index, pattern string, opts Options, useTrigrams bool) ([]Result, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	rt := ix.regexSource()
	var tg *trigrams
	if useTrigrams {
		tg = rt.waitTrigrams()
	}
	return ix.regex(c, opts, rt, tg)
}

// BenchSet loads the queries and catalog of one of the bench sets (../bench/SET), for
// the tests of both packages.
func BenchSet(t testing.TB, set string) ([]eval.Query, *catalog.Snapshot) {
	t.Helper()
	qs, err := eval.ReadQueries("../bench/" + set + "/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	snap, problems := catalog.LoadFiles("../bench/" + set + "/catalog.json")
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	return qs, snap
}
