package search_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/internal/eval"
	"github.com/toolshed/toolshed/search"
)

// TestConcurrentSearch runs many searches of one index at once and checks each answer
// against the same search run alone (run with -race).
func TestConcurrentSearch(t *testing.T) {
	grams := search.DefaultParams
	grams.Grams = 0.1
	t.Run("default", func(t *testing.T) { concurrentSearch(t, search.DefaultParams) })
	// The 4-grams' per-search state (the query's grams, the candidates) is the scratch's.
	t.Run("grams", func(t *testing.T) { concurrentSearch(t, grams) })
}

func concurrentSearch(t *testing.T, p search.Params) {
	ix := search.NewIndexParams(builtinIndex(t).Snapshot(), p)
	qs, err := eval.ReadQueries("../bench/livemcpbench/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	type request struct {
		query, pattern string
		opts           search.Options
	}
	half := catalog.NewSet(ix.Snapshot())
	for i := 0; i < ix.Snapshot().Len(); i += 2 {
		half.Add(i)
	}
	var reqs []request
	for i, q := range qs[:40] {
		opts := search.Options{Limit: 1 + i%12}
		if i%3 == 0 {
			opts.Allow = half
		}
		reqs = append(reqs, request{query: search.Shorten(q.Query, search.MaxQueryLen), opts: opts})
	}
	// Queries for the fallbacks, whose tables the first of them builds.
	for _, q := range []string{"githb isue", "screnshot", "eensho", "ead_fi", "xyzzy"} {
		reqs = append(reqs, request{query: q, opts: search.Options{Limit: 5}}, request{query: q, opts: search.Options{Limit: 3, Allow: half}})
	}
	for _, p := range []string{"issue", "github.*pull", "^browser_", "file$", "screenshot|snapshot", "[a-z]+_[a-z]+_[a-z]+"} {
		// A budget far beyond need: this test is about answers, not speed.
		reqs = append(reqs, request{pattern: p, opts: search.Options{Limit: 8, Budget: time.Minute}}, request{pattern: p, opts: search.Options{Limit: 20, Allow: half, Budget: time.Minute}})
	}
	run := func(r request) string {
		var results []search.Result
		var err error
		if r.pattern != "" {
			results, err = ix.Regex(r.pattern, r.opts)
		} else {
			results, err = ix.Search(r.query, r.opts)
		}
		return fmt.Sprint(names(results), err)
	}
	want := make([]string, len(reqs))
	for i, r := range reqs {
		want[i] = run(r)
	}
	// A fresh index, so the regex path's lazy fold, and the trigram index it builds in
	// the background, happen while the searches run.
	ix = search.NewIndexParams(ix.Snapshot(), p)
	var wg sync.WaitGroup
	errs := make(chan string, 16*len(reqs))
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range reqs {
				i := (k + g*5) % len(reqs)
				if got := run(reqs[i]); got != want[i] {
					errs <- fmt.Sprintf("request %d: got %s, want %s", i, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCache(t *testing.T) {
	a := catalogtest.Snapshot(t, smallCatalog)
	aAgain := catalogtest.Snapshot(t, smallCatalog)
	b := catalogtest.Snapshot(t, fieldCatalog)
	c := catalogtest.Snapshot(t, `{"tools": [{"name": "c"}]}`)
	var cache search.Cache
	ia := cache.Index(a)
	if ia == nil || ia.Snapshot() != a {
		t.Fatal("the cache did not index the snapshot")
	}
	if cache.Index(a) != ia || cache.Index(aAgain) != ia {
		t.Error("the same content got a new index")
	}
	ib := cache.Index(b)
	if ib == ia || ib.Snapshot() != b {
		t.Error("a different snapshot got the same index")
	}
	if cache.Len() != 2 {
		t.Errorf("Len = %d, want 2", cache.Len())
	}
	results, err := ib.Regex("zeta", search.Options{})
	if err != nil || len(results) == 0 {
		t.Errorf("the cached index does not search: %v", err)
	}

	// Size bounds the cache; the least recently used index goes first.
	small := search.Cache{Size: 2}
	ia = small.Index(a)
	ib = small.Index(b)
	if small.Index(a) != ia { // a is now the most recent
		t.Fatal("a was rebuilt")
	}
	ic := small.Index(c) // evicts b
	if small.Len() != 2 {
		t.Errorf("Len = %d, want 2", small.Len())
	}
	if small.Index(a) != ia || small.Index(c) != ic {
		t.Error("a recently used index was evicted")
	}
	if small.Index(b) == ib {
		t.Error("the least recently used index was kept")
	}

	// MaxTools bounds the tools of the indexes kept together, the least recently used
	// going first, but never the one just asked for.
	var bounded search.Cache
	bounded.SetMaxTools(a.Len() + c.Len())
	ia = bounded.Index(a)
	ic = bounded.Index(c)
	if bounded.Len() != 2 || bounded.Index(a) != ia {
		t.Fatalf("Len = %d; two indexes within the bound were not both kept", bounded.Len())
	}
	ib = bounded.Index(b) // c goes first, then a while b and a pass the bound
	want := 2
	if a.Len()+b.Len() > a.Len()+c.Len() {
		want = 1
	}
	if bounded.Len() != want || bounded.Index(b) != ib {
		t.Errorf("Len = %d, want %d, with b kept", bounded.Len(), want)
	}
	if bounded.Index(c) == ic {
		t.Error("the least recently used index was kept past the bound")
	}
	var tiny search.Cache
	tiny.SetMaxTools(1)
	if tiny.Index(b) != tiny.Index(b) || tiny.Len() != 1 {
		t.Error("an index over the bound, asked for last, was not kept")
	}
	bounded.SetMaxTools(1) // a bound lowered drops what passes it at once
	if bounded.Len() != 1 {
		t.Errorf("Len = %d after the bound was lowered to one tool", bounded.Len())
	}

	// Params apply to the indexes the cache builds.
	p := search.DefaultParams
	p.Weight[0] = 0 // the name no longer counts
	custom := search.Cache{Params: &p}
	plain, _ := cache.Index(a).Search("quadratic", search.Options{})
	weighted, _ := custom.Index(a).Search("quadratic", search.Options{})
	if len(plain) == 0 || len(weighted) == 0 || plain[0].Score == weighted[0].Score {
		t.Errorf("the cache's Params were not used: %v %v", plain, weighted)
	}
}

func TestCacheDefaultSize(t *testing.T) {
	var cache search.Cache
	first := catalogtest.Snapshot(t, `{"tools": [{"name": "t0"}]}`)
	i0 := cache.Index(first)
	for i := 1; i < 8; i++ {
		cache.Index(catalogtest.Snapshot(t, fmt.Sprintf(`{"tools": [{"name": "t%d"}]}`, i)))
	}
	if cache.Len() != 8 || cache.Index(first) != i0 {
		t.Fatalf("Len = %d; the default size holds 8", cache.Len())
	}
	cache.Index(catalogtest.Snapshot(t, `{"tools": [{"name": "t8"}]}`)) // evicts t1, the least recent
	if cache.Len() != 8 || cache.Index(first) != i0 {
		t.Errorf("Len = %d after a ninth index", cache.Len())
	}
}

// TestCacheConcurrentBuild asks for the index of one new snapshot from many goroutines at
// once: every one gets the same index, so it was built once.
func TestCacheConcurrentBuild(t *testing.T) {
	for round := range 5 {
		var cache search.Cache
		snaps := []*catalog.Snapshot{catalogtest.Snapshot(t, smallCatalog), catalogtest.Snapshot(t, smallCatalog), catalogtest.Snapshot(t, fieldCatalog)}
		got := make([]*search.Index, 48)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[g] = cache.Index(snaps[g%3])
			}()
		}
		close(start)
		wg.Wait()
		for g, ix := range got {
			want := got[0]
			if g%3 == 2 {
				want = got[2]
			}
			if ix != want || ix == nil {
				t.Fatalf("round %d: goroutine %d got another index", round, g)
			}
		}
		if got[0] == got[2] || cache.Len() != 2 {
			t.Fatalf("round %d: %d indexes", round, cache.Len())
		}
		if r, err := got[0].Search("weather forecast", search.Options{}); err != nil || len(r) == 0 || !reflect.DeepEqual(r[0].Tool.Name, "get_forecast") {
			t.Fatalf("round %d: the shared index does not search: %v %v", round, r, err)
		}
	}
}
