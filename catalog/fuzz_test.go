package catalog_test

import (
	"errors"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// FuzzParse feeds arbitrary bytes to Parse and then Build: neither may panic, every
// problem wraps one of the package's sentinel errors, and every tool that loads has a
// valid, unique qualified name that finds it again.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"servers": [{"name": "github", "tools": [{"name": "create_issue", "description": "Create an issue", "inputSchema": {"type": "object", "properties": {"title": {"type": "string", "description": "Title"}}, "required": ["title"]}}]}]}`,
		`{"servers": [{"name": "s", "alwaysLoad": true, "tools": [{"name": "a", "_meta": {"anthropic/alwaysLoad": true}, "annotations": {"title": "A", "readOnlyHint": true}}]}, {"name": 5}, 7]}`,
		`{"tools": [{"name": "solve.quadratic_equation"}, {"name": "solve_quadratic_equation"}, {"name": "a b"}]}`,
		`{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "x", "outputSchema": {"type": "object"}}]}}`,
		`[{"name": "x"}, {"name": "x"}, {"name": ""}, {"name": 5}, 3, "s", null, {"name": "y", "inputSchema": {"type": "string"}}]`,
		`[{"name": "caf\u00e9", "description": "\ud83d\ude00", "inputSchema": {"properties": {"n": {"default": 1.0e2, "items": {"properties": {"m": {}}}}}}}]`,
		`{"servers": [{"name": "a__b", "tools": []}, {"name": "My Server", "tools": [{"name": "t"}]}, {"name": "", "tools": [{"name": "u"}]}]}`,
		`{"servers": {"name": "x"}}`,
		`{"servers": null, "tools": null}`,
		`{"result": {}}`,
		"\xef\xbb\xbf[]",
		`{"tools": [{"name": "` + "\xff\xfe" + `"}]}`,
		`[{"name": "a", "description": 5, "title": [], "annotations": "x", "_meta": 1}]`,
		`{"servers":[{},0]}`,
		`null`, `0`, `"x"`, `{`, `[`, ``, `{"tools": [`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sources, problems := catalog.Parse(data, "fuzz", "default")
		for _, p := range problems {
			if !wrapsSentinel(p) {
				t.Fatalf("Parse problem wraps no sentinel: %v", p)
			}
		}
		for _, s := range sources {
			if s.Origin != "fuzz" {
				t.Fatalf("source origin %q", s.Origin)
			}
		}
		snap, problems := catalog.Build(sources)
		for _, p := range problems {
			if !wrapsSentinel(p) {
				t.Fatalf("Build problem wraps no sentinel: %v", p)
			}
		}
		checkNames(t, snap)
		for _, tl := range snap.Tools() {
			if tl.Name == "" || tl.Server == "" || len(tl.Raw) == 0 {
				t.Fatalf("tool loaded without name, server or definition: %+v", tl)
			}
			if _, err := snap.Lookup(tl.Name, nil); err != nil && !errors.Is(err, catalog.ErrAmbiguous) {
				t.Fatalf("Lookup(%q): %v", tl.Name, err)
			}
		}
		again, _ := catalog.Build(sources)
		if again.Hash() != snap.Hash() || again.Len() != snap.Len() {
			t.Fatalf("two builds of the same sources differ")
		}
	})
}
