package catalog_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// sentinels are every error a Problem or a lookup may wrap.
var sentinels = []error{
	catalog.ErrNotJSON, catalog.ErrFormat, catalog.ErrServerName, catalog.ErrToolName,
	catalog.ErrDuplicate, catalog.ErrSchema, catalog.ErrField, catalog.ErrUnknownTool,
	catalog.ErrAmbiguous,
}

// wrapsSentinel reports whether err wraps one of the package's sentinel errors.
func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// srcView is what a test compares of a Source: its server, pinning and tools as text.
type srcView struct {
	Server     string
	AlwaysLoad bool
	Tools      []string
	Origin     string
}

func view(sources []catalog.Source) []srcView {
	var out []srcView
	for _, s := range sources {
		v := srcView{Server: s.Server, AlwaysLoad: s.AlwaysLoad, Origin: s.Origin}
		for _, t := range s.Tools {
			v.Tools = append(v.Tools, string(t))
		}
		out = append(out, v)
	}
	return out
}

func TestParseAccepted(t *testing.T) {
	const a, b = `{"name":"a"}`, `{ "name" : "b" , "description":"B"}`
	tests := []struct {
		name string
		doc  string
		want []srcView
	}{
		{
			name: "catalog form",
			doc:  `{"servers": [{"name": "one", "tools": [` + a + `,` + b + `]}, {"name": "two", "alwaysLoad": true, "tools": [` + a + `]}]}`,
			want: []srcView{
				{Server: "one", Tools: []string{a, b}, Origin: "doc"},
				{Server: "two", AlwaysLoad: true, Tools: []string{a}, Origin: "doc"},
			},
		},
		{
			name: "catalog form, alwaysLoad false and null, tools null and absent",
			doc:  `{"servers": [{"name": "one", "alwaysLoad": false, "tools": null}, {"name": "two", "alwaysLoad": null}]}`,
			want: []srcView{{Server: "one", Origin: "doc"}, {Server: "two", Origin: "doc"}},
		},
		{
			name: "catalog form with an empty server list",
			doc:  `{"servers": []}`,
			want: nil,
		},
		{
			name: "tools/list result",
			doc:  `{"tools": [` + a + `, ` + b + `], "nextCursor": "x"}`,
			want: []srcView{{Server: "default", Tools: []string{a, b}, Origin: "doc"}},
		},
		{
			name: "tools/list result with no tools",
			doc:  `{"tools": []}`,
			want: []srcView{{Server: "default", Origin: "doc"}},
		},
		{
			name: "JSON-RPC response",
			doc:  `{"jsonrpc": "2.0", "id": 7, "result": {"tools": [` + b + `]}}`,
			want: []srcView{{Server: "default", Tools: []string{b}, Origin: "doc"}},
		},
		{
			name: "JSON-RPC response wrapping the catalog form",
			doc:  `{"jsonrpc": "2.0", "id": 7, "result": {"servers": [{"name": "s", "tools": [` + a + `]}]}}`,
			want: []srcView{{Server: "s", Tools: []string{a}, Origin: "doc"}},
		},
		{
			name: "bare array",
			doc:  `[` + a + `,` + b + `]`,
			want: []srcView{{Server: "default", Tools: []string{a, b}, Origin: "doc"}},
		},
		{
			name: "bare array keeps elements that are not objects for Build to report",
			doc:  `[` + a + `, 5, "x"]`,
			want: []srcView{{Server: "default", Tools: []string{a, `5`, `"x"`}, Origin: "doc"}},
		},
		{
			name: "byte order mark and surrounding whitespace",
			doc:  "\xef\xbb\xbf \r\n\t[" + a + "]\r\n",
			want: []srcView{{Server: "default", Tools: []string{a}, Origin: "doc"}},
		},
		{
			name: "servers wins over tools",
			doc:  `{"tools": [` + b + `], "servers": [{"name": "s", "tools": [` + a + `]}]}`,
			want: []srcView{{Server: "s", Tools: []string{a}, Origin: "doc"}},
		},
		{
			name: "a bad server entry does not spoil the others",
			doc:  `{"servers": [5, {"name": "ok", "tools": [` + a + `]}, {"name": 3}]}`,
			want: []srcView{{Server: "ok", Tools: []string{a}, Origin: "doc"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sources, problems := catalog.Parse([]byte(tc.doc), "doc", "default")
			if tc.name == "a bad server entry does not spoil the others" {
				if len(problems) != 2 {
					t.Fatalf("problems = %v, want 2", problems)
				}
			} else if len(problems) != 0 {
				t.Fatalf("unexpected problems: %v", problems)
			}
			if got := view(sources); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sources =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestParseRejected(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    error
		message string // a part of the problem's message
	}{
		{"empty", ``, catalog.ErrNotJSON, "not valid JSON"},
		{"only whitespace", " \n\t", catalog.ErrNotJSON, "not valid JSON"},
		{"only a byte order mark", "\xef\xbb\xbf", catalog.ErrNotJSON, "not valid JSON"},
		{"truncated object", `{"tools": [`, catalog.ErrNotJSON, "not valid JSON"},
		{"truncated array", `[{"name": "a"}`, catalog.ErrNotJSON, "not valid JSON"},
		{"text", `tools: [a, b]`, catalog.ErrNotJSON, "not valid JSON"},
		{"trailing garbage", `{"tools": []} x`, catalog.ErrNotJSON, "not valid JSON"},
		{"trailing comma", `[{"name": "a"},]`, catalog.ErrNotJSON, "not valid JSON"},
		{"single quotes", `{'tools': []}`, catalog.ErrNotJSON, "not valid JSON"},
		{"bad literal", `nul`, catalog.ErrNotJSON, "not valid JSON"},
		{"null", `null`, catalog.ErrFormat, "the document is null"},
		{"string", `"tools"`, catalog.ErrFormat, "the document is a string"},
		{"number", `42`, catalog.ErrFormat, "the document is a number"},
		{"boolean", `true`, catalog.ErrFormat, "the document is a boolean"},
		{"empty object", `{}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"keys in the wrong case", `{"SERVERS": [{"NAME": "x", "TOOLS": []}]}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"Tools in the wrong case", `{"Tools": []}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"other object", `{"name": "a", "description": "x"}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"tools is an object", `{"tools": {"name": "a"}}`, catalog.ErrFormat, `"tools" must be an array, got an object`},
		{"tools is a string", `{"tools": "a"}`, catalog.ErrFormat, `"tools" must be an array, got a string`},
		{"tools is null", `{"tools": null}`, catalog.ErrFormat, `"tools" must be an array, got null`},
		{"servers is an object", `{"servers": {"name": "s"}}`, catalog.ErrFormat, `"servers" must be an array, got an object`},
		{"servers is null", `{"servers": null}`, catalog.ErrFormat, `"servers" must be an array, got null`},
		{"servers is a number", `{"servers": 1}`, catalog.ErrFormat, `"servers" must be an array, got a number`},
		{"result is not an object", `{"jsonrpc": "2.0", "result": [1]}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"result without tools", `{"jsonrpc": "2.0", "result": {}}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
		{"result with bad tools", `{"result": {"tools": 5}}`, catalog.ErrFormat, `"tools" must be an array, got a number`},
		{"JSON-RPC error", `{"jsonrpc": "2.0", "error": {"code": -32601, "message": "no"}}`, catalog.ErrFormat, `neither "servers" nor "tools"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sources, problems := catalog.Parse([]byte(tc.doc), "file.json", "default")
			if sources != nil {
				t.Errorf("sources = %v, want none", view(sources))
			}
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want exactly one", problems)
			}
			p := problems[0]
			if !errors.Is(p, tc.want) || !errors.Is(p.Err, tc.want) {
				t.Errorf("problem %v does not wrap %v", p, tc.want)
			}
			if p.Origin != "file.json" || p.Server != "" || p.Tool != "" {
				t.Errorf("problem locates itself as %q/%q/%q, want origin file.json only", p.Origin, p.Server, p.Tool)
			}
			if !strings.Contains(p.Error(), tc.message) || !strings.HasPrefix(p.Error(), "file.json: ") {
				t.Errorf("message %q lacks %q or the origin", p.Error(), tc.message)
			}
		})
	}
}

func TestParseServerEntryProblems(t *testing.T) {
	tests := []struct {
		name   string
		entry  string
		want   error
		server string // the Problem's Server: the name, or the entry's position
	}{
		{"entry is a number", `5`, catalog.ErrFormat, "#1"},
		{"entry is an array", `[]`, catalog.ErrFormat, "#1"},
		{"entry is a string", `"github"`, catalog.ErrFormat, "#1"},
		{"entry is null", `null`, catalog.ErrFormat, "#1"},
		{"no name", `{"tools": []}`, catalog.ErrServerName, "#1"},
		{"name is null", `{"name": null, "tools": []}`, catalog.ErrServerName, "#1"},
		{"name is a number", `{"name": 5, "tools": []}`, catalog.ErrServerName, "#1"},
		{"name is an object", `{"name": {}, "tools": []}`, catalog.ErrServerName, "#1"},
		{"alwaysLoad is a string", `{"name": "s", "alwaysLoad": "yes", "tools": []}`, catalog.ErrField, "s"},
		{"alwaysLoad is a number", `{"name": "s", "alwaysLoad": 1, "tools": []}`, catalog.ErrField, "s"},
		{"tools is an object", `{"name": "s", "tools": {}}`, catalog.ErrFormat, "s"},
		{"tools is a string", `{"name": "s", "tools": "x"}`, catalog.ErrFormat, "s"},
		{"tools is a number", `{"name": "s", "tools": 3}`, catalog.ErrFormat, "s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"servers": [` + tc.entry + `, {"name": "good", "tools": [{"name": "ok"}]}]}`
			sources, problems := catalog.Parse([]byte(doc), "cat.json", "default")
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want exactly one", problems)
			}
			p := problems[0]
			if !errors.Is(p, tc.want) {
				t.Errorf("problem %v does not wrap %v", p, tc.want)
			}
			if p.Origin != "cat.json" || p.Server != tc.server {
				t.Errorf("problem at %q server %q, want cat.json server %q", p.Origin, p.Server, tc.server)
			}
			want := []srcView{{Server: "good", Tools: []string{`{"name": "ok"}`}, Origin: "cat.json"}}
			if got := view(sources); !reflect.DeepEqual(got, want) {
				t.Errorf("the other server did not load: %+v", got)
			}
		})
	}
}

// TestParseSecondEntryLabel checks that a nameless entry is labelled by its position.
func TestParseSecondEntryLabel(t *testing.T) {
	_, problems := catalog.Parse([]byte(`{"servers": [{"name": "a"}, {"name": "b"}, {"tools": []}]}`), "o", "d")
	if len(problems) != 1 || problems[0].Server != "#3" || !errors.Is(problems[0], catalog.ErrServerName) {
		t.Fatalf("problems = %v, want one ErrServerName for server #3", problems)
	}
}

// TestParseFormsAgree checks that one tool list loads to the same tools, byte for byte,
// whatever form carries it.
func TestParseFormsAgree(t *testing.T) {
	tools := `[{"name": "x", "inputSchema": {"type": "object"}},` + "\n" + ` {"name":"y","description":"Y \u00e9"}]`
	forms := []string{
		`{"servers": [{"name": "srv", "tools": ` + tools + `}]}`,
		`{"tools": ` + tools + `}`,
		`{"jsonrpc": "2.0", "id": 1, "result": {"tools": ` + tools + `}}`,
		tools,
	}
	var hashes []string
	for _, doc := range forms {
		sources, problems := catalog.Parse([]byte(doc), "o", "srv")
		if len(problems) != 0 {
			t.Fatalf("%s: %v", doc, problems)
		}
		snap, problems := catalog.Build(sources)
		if len(problems) != 0 || snap.Len() != 2 {
			t.Fatalf("%s: %d tools, problems %v", doc, snap.Len(), problems)
		}
		var raws []json.RawMessage
		for _, tl := range snap.Tools() {
			raws = append(raws, tl.Raw)
		}
		if string(raws[0]) != `{"name": "x", "inputSchema": {"type": "object"}}` || string(raws[1]) != `{"name":"y","description":"Y \u00e9"}` {
			t.Errorf("%s: raw tools %s", doc, raws)
		}
		hashes = append(hashes, snap.Hash())
	}
	for _, h := range hashes[1:] {
		if h != hashes[0] {
			t.Errorf("the same tools in different forms hash differently: %v", hashes)
		}
	}
}

func TestReadFile(t *testing.T) {
	sources, problems := catalog.ReadFile("testdata/My Server.json")
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	if len(sources) != 1 || sources[0].Server != "My-Server" || sources[0].Origin != "testdata/My Server.json" {
		t.Fatalf("sources = %+v, want server My-Server from the file name", view(sources))
	}
	_, problems = catalog.ReadFile("testdata/does-not-exist.json")
	if len(problems) != 1 || problems[0].Origin != "testdata/does-not-exist.json" || !strings.Contains(problems[0].Error(), "cannot read") {
		t.Fatalf("problems = %v, want one cannot-read problem", problems)
	}
}

func TestLoadFiles(t *testing.T) {
	snap, problems := catalog.LoadFiles("testdata/My Server.json", "testdata/odd.json", "testdata/does-not-exist.json")
	if len(problems) != 1 {
		t.Fatalf("problems = %v, want only the missing file", problems)
	}
	var names []string
	for _, tl := range snap.Tools() {
		names = append(names, tl.Qualified)
	}
	want := []string{"My-Server__greet", "My-Server__farewell", "odd__odd_tool"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}
