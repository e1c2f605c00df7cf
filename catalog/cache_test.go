package catalog_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
)

// cacheSources are the real catalogs toolshed ships and benchmarks on, and one source
// of definitions a catalog refuses (so that refusals are cached too).
func cacheSources(t *testing.T) []catalog.Source {
	t.Helper()
	sources, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	return append(sources, source("odd",
		`{"name": "ok", "description": "Fine."}`,
		`{"description": "No name."}`,
		`{"name": "bad_schema", "inputSchema": "string"}`,
		`{"name": "ok", "description": "Twice."}`,
		`[1, 2]`))
}

// sameTools reports whether two snapshots' tools are the same to a reader: every
// exported field, and the token count.
func sameTools(a, b *catalog.Snapshot) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i, ta := range a.Tools() {
		tb := b.Tool(i)
		va, vb := reflect.ValueOf(ta).Elem(), reflect.ValueOf(tb).Elem()
		for f := range va.NumField() {
			if va.Type().Field(f).IsExported() && !reflect.DeepEqual(va.Field(f).Interface(), vb.Field(f).Interface()) {
				return false
			}
		}
		if a.ToolTokens(ta) != b.ToolTokens(tb) {
			return false
		}
	}
	return true
}

// A build through a cache is the build without one, the first time and every time
// after: the same tools (every decoded field, the qualified names, the indexes, the
// token counts), the same problems, the same servers and the same hash. A source's
// pinning and search text are its own: a definition built before with others keeps
// none of them.
func TestCacheBuildsAsBuild(t *testing.T) {
	sources := cacheSources(t)
	var cache catalog.Cache
	changed := make([]catalog.Source, len(sources))
	copy(changed, sources)
	changed[0].AlwaysLoad = !changed[0].AlwaysLoad
	changed[1].Search = map[string]catalog.SearchText{}
	for _, raw := range changed[1].Tools {
		var tool struct{ Name string }
		json.Unmarshal(raw, &tool)
		changed[1].Search[tool.Name] = catalog.SearchText{Keywords: []string{"cached"}}
	}
	for i, srcs := range [][]catalog.Source{sources, sources, changed, sources, changed[:1]} {
		want, wantProblems := catalog.Build(srcs)
		got, gotProblems := cache.Build(srcs)
		if got.Hash() != want.Hash() {
			t.Errorf("build %d: hash %s, want %s", i, got.Hash(), want.Hash())
		}
		if !sameTools(got, want) {
			t.Errorf("build %d: the tools differ from Build's", i)
		}
		if !reflect.DeepEqual(gotProblems, wantProblems) {
			t.Errorf("build %d: problems %v, want %v", i, gotProblems, wantProblems)
		}
		if got.Tokens() != want.Tokens() || !reflect.DeepEqual(got.Servers(), want.Servers()) {
			t.Errorf("build %d: tokens %d and servers %v, want %d and %v", i, got.Tokens(), got.Servers(), want.Tokens(), want.Servers())
		}
	}
}

// A definition the cache holds is not decoded again: the second build's tools hold the
// first's decoded parameters, not copies.
func TestCacheDecodesOnce(t *testing.T) {
	sources := cacheSources(t)
	var cache catalog.Cache
	first, _ := cache.Build(sources)
	second, _ := cache.Build(sources)
	reused := 0
	for i, tool := range second.Tools() {
		if len(tool.Params) == 0 {
			continue
		}
		if &tool.Params[0] != &first.Tool(i).Params[0] {
			t.Fatalf("%s was decoded again", tool.Qualified)
		}
		reused++
	}
	if reused < 1000 {
		t.Fatalf("only %d tools with parameters were compared", reused)
	}
	// A build without the cache decodes its own.
	plain, _ := catalog.Build(sources)
	if tool := plain.Tool(first.Len() - 1); len(tool.Params) > 0 && &tool.Params[0] == &first.Tool(first.Len() - 1).Params[0] {
		t.Fatal("Build without a cache shares a cached tool")
	}
}

// A token count is shared with the tool a definition was built into before only under
// the same qualified name: the same definition qualified otherwise (a sanitized name
// that another tool of its server now claims) is sent to a model otherwise, and is
// counted again.
func TestCacheCountsByQualifiedName(t *testing.T) {
	dotted := json.RawMessage(`{"name": "a.b", "description": "A tool whose name has a dot, which clients refuse."}`)
	alone := []catalog.Source{{Server: "s", Tools: []json.RawMessage{dotted}}}
	claimed := []catalog.Source{{Server: "s", Tools: []json.RawMessage{dotted, json.RawMessage(`{"name": "a_b"}`)}}}
	var cache catalog.Cache
	for _, srcs := range [][]catalog.Source{alone, claimed, alone} {
		got, _ := cache.Build(srcs)
		want, _ := catalog.Build(srcs)
		if g, w := got.Tool(0), want.Tool(0); g.Qualified != w.Qualified || got.ToolTokens(g) != want.ToolTokens(w) {
			t.Errorf("%s: %d tokens, want %s: %d", g.Qualified, got.ToolTokens(g), w.Qualified, want.ToolTokens(w))
		}
	}
}

// Prune keeps what a build used since the last Prune and forgets the rest, so a cache
// holds about what the current catalog holds, however often the lists change.
func TestCachePrune(t *testing.T) {
	sources := cacheSources(t)
	all := 0
	for _, src := range sources {
		all += len(src.Tools)
	}
	var cache catalog.Cache
	cache.Build(sources)
	if cache.Len() != all {
		t.Fatalf("after one build the cache holds %d definitions, want %d", cache.Len(), all)
	}
	cache.Prune()
	cache.Build(sources[:1])
	cache.Prune()
	if got := cache.Len(); got != len(sources[0].Tools) {
		t.Fatalf("after a build of one server's %d tools and a prune, the cache holds %d", len(sources[0].Tools), got)
	}
	cache.Prune()
	if cache.Len() != 0 {
		t.Fatalf("after a prune with no build, the cache holds %d", cache.Len())
	}
	var none *catalog.Cache
	none.Prune()
	if snap, _ := none.Build(sources[:1]); snap.Len() != len(sources[0].Tools) || none.Len() != 0 {
		t.Fatal("a nil cache does not build as Build does")
	}
}

// Builds through one cache may run at once (a gateway's assembly beside an upstream
// counting its own tokens); go test -race checks them.
func TestCacheConcurrent(t *testing.T) {
	sources := cacheSources(t)
	want, _ := catalog.Build(sources)
	var cache catalog.Cache
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				got, _ := cache.Build(sources[(w+i)%2:])
				if i == 2 && w%2 == 0 && (got.Hash() != want.Hash() || got.Tokens() != want.Tokens()) {
					t.Errorf("a concurrent build differs from Build's")
				}
				if w == 0 {
					cache.Prune()
				}
			}
		}()
	}
	wg.Wait()
}
