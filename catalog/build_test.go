package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// build loads one server's tools, given as JSON texts, and fails the test on a problem.
func build(t testing.TB, server string, tools ...string) *catalog.Snapshot {
	t.Helper()
	snap, problems := catalog.Build([]catalog.Source{source(server, tools...)})
	if len(problems) != 0 {
		t.Fatalf("unexpected problems: %v", problems)
	}
	return snap
}

func source(server string, tools ...string) catalog.Source {
	s := catalog.Source{Server: server, Origin: "test"}
	for _, tl := range tools {
		s.Tools = append(s.Tools, json.RawMessage(tl))
	}
	return s
}

func qualifiedNames(snap *catalog.Snapshot) []string {
	var names []string
	for _, t := range snap.Tools() {
		names = append(names, t.Qualified)
	}
	return names
}

// TestBuildToolProblems puts one bad tool between two good ones: the bad one is reported
// with its reason, and the good ones load.
func TestBuildToolProblems(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		want    error
		label   string // Problem.Tool
		message string
	}{
		{"no name", `{"description": "nameless"}`, catalog.ErrToolName, "#2", `no "name"`},
		{"null name", `{"name": null}`, catalog.ErrToolName, "#2", `no "name"`},
		{"empty name", `{"name": ""}`, catalog.ErrToolName, "#2", `"name" is empty`},
		{"blank name", `{"name": " \t"}`, catalog.ErrToolName, `" \t"`, `"name" is empty`},
		{"numeric name", `{"name": 5}`, catalog.ErrToolName, "#2", `"name" must be a string, got a number`},
		{"array name", `{"name": ["a"]}`, catalog.ErrToolName, "#2", `"name" must be a string, got an array`},
		{"object name", `{"name": {"en": "a"}}`, catalog.ErrToolName, "#2", `"name" must be a string, got an object`},
		{"boolean name", `{"name": true}`, catalog.ErrToolName, "#2", `"name" must be a string, got a boolean`},
		{"schema is a string", `{"name": "bad", "inputSchema": "object"}`, catalog.ErrSchema, `"bad"`, `"inputSchema" must be a JSON Schema object, got a string`},
		{"schema is an array", `{"name": "bad", "inputSchema": [{"type": "object"}]}`, catalog.ErrSchema, `"bad"`, "got an array"},
		{"schema is a number", `{"name": "bad", "inputSchema": 1}`, catalog.ErrSchema, `"bad"`, "got a number"},
		{"schema is a boolean", `{"name": "bad", "inputSchema": true}`, catalog.ErrSchema, `"bad"`, "got a boolean"},
		{"schema of a string", `{"name": "bad", "inputSchema": {"type": "string"}}`, catalog.ErrSchema, `"bad"`, `"type": "string"`},
		{"schema of an array", `{"name": "bad", "inputSchema": {"type": "array", "items": {}}}`, catalog.ErrSchema, `"bad"`, `"type": "array"`},
		{"schema with a type list", `{"name": "bad", "inputSchema": {"type": ["object", "null"]}}`, catalog.ErrSchema, `"bad"`, `must describe an object`},
		{"output schema is a string", `{"name": "bad", "inputSchema": {"type": "object"}, "outputSchema": "x"}`, catalog.ErrSchema, `"bad"`, `"outputSchema" must be a JSON Schema object`},
		{"output schema of a string", `{"name": "bad", "outputSchema": {"type": "string"}}`, catalog.ErrSchema, `"bad"`, `"outputSchema" must describe an object`},
		{"description is a number", `{"name": "bad", "description": 3}`, catalog.ErrField, `"bad"`, `"description" must be a string, got a number`},
		{"description is an object", `{"name": "bad", "description": {"text": "x"}}`, catalog.ErrField, `"bad"`, `"description" must be a string, got an object`},
		{"title is an array", `{"name": "bad", "title": ["x"]}`, catalog.ErrField, `"bad"`, `"title" must be a string, got an array`},
		{"annotations is a string", `{"name": "bad", "annotations": "readOnly"}`, catalog.ErrField, `"bad"`, `"annotations" must be an object, got a string`},
		{"annotations is an array", `{"name": "bad", "annotations": []}`, catalog.ErrField, `"bad"`, `"annotations" must be an object, got an array`},
		{"_meta is a number", `{"name": "bad", "_meta": 1}`, catalog.ErrField, `"bad"`, `"_meta" must be an object, got a number`},
		{"tool is a string", `"bad"`, catalog.ErrField, "#2", "a tool must be a JSON object, got a string"},
		{"tool is an array", `[{"name": "bad"}]`, catalog.ErrField, "#2", "got an array"},
		{"tool is null", `null`, catalog.ErrField, "#2", "got null"},
		{"tool is not JSON", `{"name": "bad",`, catalog.ErrNotJSON, "#2", "not valid JSON"},
		{"duplicate", `{"name": "first", "description": "again"}`, catalog.ErrDuplicate, `"first"`, `lists a tool named "first" twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := source("srv", `{"name": "first"}`, tc.tool, `{"name": "last", "inputSchema": {"type": "object"}}`)
			src.Origin = "cat.json"
			snap, problems := catalog.Build([]catalog.Source{src})
			if got := qualifiedNames(snap); !reflect.DeepEqual(got, []string{"srv__first", "srv__last"}) {
				t.Errorf("loaded %v, want srv__first and srv__last", got)
			}
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want exactly one", problems)
			}
			p := problems[0]
			if !errors.Is(p, tc.want) {
				t.Errorf("problem %v does not wrap %v", p, tc.want)
			}
			if p.Origin != "cat.json" || p.Server != "srv" || p.Tool != tc.label {
				t.Errorf("problem located at %q/%q/%q, want cat.json/srv/%s", p.Origin, p.Server, p.Tool, tc.label)
			}
			if !strings.Contains(p.Error(), tc.message) {
				t.Errorf("message %q does not say %q", p.Error(), tc.message)
			}
			if snap.Tool(1).Index != 1 {
				t.Errorf("the tool after the bad one has index %d, want 1", snap.Tool(1).Index)
			}
		})
	}
}

func TestBuildServerNames(t *testing.T) {
	tests := []struct {
		server string
		want   string // the qualified prefix; "" when the server is rejected
	}{
		{"github", "github"},
		{"My Server", "My-Server"},
		{"my.server/v2", "my-server-v2"},
		{"a_b", "a_b"},
		{"_edge_", "edge"},
		{"--x--", "x"},
		{"日本", "server"},
		{strings.Repeat("s", 300), strings.Repeat("s", catalog.MaxNameLen-3)},
		{"a__b", ""},
		{"a___b", ""},
		{"__", ""},
		{"", ""},
		{"  \t", ""},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			snap, problems := catalog.Build([]catalog.Source{source(tc.server, `{"name": "t"}`), source("other", `{"name": "u"}`)})
			if tc.want == "" {
				if len(problems) != 1 || !errors.Is(problems[0], catalog.ErrServerName) || problems[0].Server != tc.server {
					t.Fatalf("problems = %v, want one ErrServerName for %q", problems, tc.server)
				}
				if got := qualifiedNames(snap); !reflect.DeepEqual(got, []string{"other__u"}) {
					t.Errorf("loaded %v, want only other__u", got)
				}
				if _, err := catalog.ServerName(tc.server); !errors.Is(err, catalog.ErrServerName) {
					t.Errorf("ServerName(%q) error = %v, want ErrServerName", tc.server, err)
				}
				return
			}
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			tl := snap.Tool(0)
			if tl.Server != tc.want || tl.Qualified != catalog.Qualify(tc.want, "t") {
				t.Errorf("server %q, qualified %q; want server %q", tl.Server, tl.Qualified, tc.want)
			}
			if got, err := catalog.ServerName(tc.server); err != nil || got != tc.want {
				t.Errorf("ServerName(%q) = %q, %v; want %q", tc.server, got, err, tc.want)
			}
			if s := snap.Servers(); len(s) != 2 || s[0].Name != tc.want || s[0].Tools != 1 {
				t.Errorf("servers = %+v", s)
			}
		})
	}
}

// TestBuildMergesServers checks that sources naming one server share it.
func TestBuildMergesServers(t *testing.T) {
	snap, problems := catalog.Build([]catalog.Source{
		source("My Server", `{"name": "a"}`),
		source("other", `{"name": "b"}`),
		source("My-Server", `{"name": "c"}`, `{"name": "a"}`),
	})
	if len(problems) != 1 || !errors.Is(problems[0], catalog.ErrDuplicate) {
		t.Fatalf("problems = %v, want the second My-Server__a as a duplicate", problems)
	}
	want := []catalog.ServerSummary{{Name: "My-Server", Tools: 2}, {Name: "other", Tools: 1}}
	got := snap.Servers()
	for i := range got {
		got[i].Tokens = 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servers = %+v, want %+v", got, want)
	}
}

func TestBuildByteFaithful(t *testing.T) {
	const (
		schema = "{ \"type\" :\t\"object\" ,\n  \"properties\": {\"caf\\u00e9\": {\"type\": \"number\", \"default\": 1.0e2, \"description\": \"Tasse \\u00e0 caf\\u00e9\"},\n\"b\":{}} , \"required\" : [\"caf\\u00e9\"]  }"
		output = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"maximum\":1E+3}}}"
		annot  = "{ \"readOnlyHint\":true,\"title\":\"Caf\\u00e9 \\ud83d\\ude00\" }"
		meta   = "{\"z\": [1, 2.50, -0.0], \"anthropic/alwaysLoad\":true}"
		tool   = "{\n\t\"_meta\" :" + meta + ",\"outputSchema\": " + output + ",\n  \"inputSchema\"  : " + schema + " ,\"annotations\":" + annot +
			", \"description\":\"Brew \\\"strong\\\" caf\\u00e9\\n\\/ now\", \"name\" : \"brew.coffee\" , \"x-extra\": [null, {}] }"
	)
	forms := map[string]string{
		"servers": "{\"servers\" : [ {\"tools\":[ " + tool + " ], \"name\":\"cafe\"} ] }",
		"tools":   "\xef\xbb\xbf{\r\n\"tools\":[" + tool + "\r\n]}",
		"result":  "{\"id\":1,\"result\":{\"tools\":[\n" + tool + "]},\"jsonrpc\":\"2.0\"}",
		"array":   " [ " + tool + " ] ",
	}
	for form, doc := range forms {
		t.Run(form, func(t *testing.T) {
			sources, problems := catalog.Parse([]byte(doc), "o", "cafe")
			if len(problems) != 0 {
				t.Fatal(problems)
			}
			snap, problems := catalog.Build(sources)
			if len(problems) != 0 || snap.Len() != 1 {
				t.Fatalf("%d tools, problems %v", snap.Len(), problems)
			}
			tl := snap.Tool(0)
			for _, f := range []struct {
				field     string
				got, want []byte
			}{
				{"Raw", tl.Raw, []byte(tool)},
				{"InputSchema", tl.InputSchema, []byte(schema)},
				{"OutputSchema", tl.OutputSchema, []byte(output)},
				{"Annotations", tl.Annotations, []byte(annot)},
				{"Meta", tl.Meta, []byte(meta)},
			} {
				if !bytes.Equal(f.got, f.want) {
					t.Errorf("%s =\n%q\nwant\n%q", f.field, f.got, f.want)
				}
			}
			// The decoded fields are for search and display.
			if tl.Name != "brew.coffee" || tl.Qualified != "cafe__brew_coffee" {
				t.Errorf("name %q qualified %q", tl.Name, tl.Qualified)
			}
			if tl.Description != "Brew \"strong\" café\n/ now" {
				t.Errorf("description %q", tl.Description)
			}
			if tl.Title != "Café 😀" {
				t.Errorf("title %q, want the annotations' title", tl.Title)
			}
			if !tl.Pinned || !tl.ReadOnly() || tl.Destructive() {
				t.Errorf("pinned %v read-only %v destructive %v", tl.Pinned, tl.ReadOnly(), tl.Destructive())
			}
			wantParams := []catalog.Param{{Name: "café", Description: "Tasse à café", Required: true}, {Name: "b"}}
			if !reflect.DeepEqual(tl.Params, wantParams) || !reflect.DeepEqual(tl.Required, []string{"café"}) {
				t.Errorf("params %+v required %q", tl.Params, tl.Required)
			}
			// The definition sent to a model carries the schema unchanged but for
			// whitespace: escapes, number spelling and key order stay.
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(schema)); err != nil {
				t.Fatal(err)
			}
			def := tl.Definition()
			if !bytes.Contains(def, []byte(`"input_schema":`+compact.String()+`}`)) || !json.Valid(def) {
				t.Errorf("definition %s does not carry the compacted schema %s", def, compact.String())
			}
		})
	}
}

// TestBuildByteFaithfulFile reads a file with CRLF line ends, tabs, a byte order mark and
// escapes: every raw field is exactly the bytes between its delimiters in the file.
func TestBuildByteFaithfulFile(t *testing.T) {
	data, err := os.ReadFile("testdata/odd.json")
	if err != nil {
		t.Fatal(err)
	}
	snap, problems := catalog.LoadFiles("testdata/odd.json")
	if len(problems) != 0 || snap.Len() != 1 {
		t.Fatalf("%d tools, problems %v", snap.Len(), problems)
	}
	tl := snap.Tool(0)
	start := bytes.Index(data, []byte(`{ "_meta"`))
	end := bytes.LastIndex(data, []byte("\t\t}")) + 3
	if !bytes.Equal(tl.Raw, data[start:end]) {
		t.Errorf("Raw =\n%q\nwant\n%q", tl.Raw, data[start:end])
	}
	if want := `{"properties":{"n\u00e9":{"type":"number","default":1.0e2}} , "type":"object"}`; string(tl.InputSchema) != want {
		t.Errorf("InputSchema = %s", tl.InputSchema)
	}
	if want := `{ "anthropic/alwaysLoad" : true }`; string(tl.Meta) != want || !tl.Pinned {
		t.Errorf("Meta = %s, pinned %v", tl.Meta, tl.Pinned)
	}
	if tl.Description != `Café "quoted" / slash` || tl.Params[0].Name != "né" {
		t.Errorf("description %q params %+v", tl.Description, tl.Params)
	}
	if tl.OutputSchema != nil || tl.Annotations != nil {
		t.Errorf("absent fields are not nil: %s %s", tl.OutputSchema, tl.Annotations)
	}
}

// A schema's "type" is read as a JSON string, escapes and all.
func TestBuildSchemaTypeEscaped(t *testing.T) {
	snap := build(t, "s", `{"name": "a", "inputSchema": {"type": "\u006fbject"}}`)
	if snap.Len() != 1 || string(snap.Tool(0).InputSchema) != `{"type": "\u006fbject"}` {
		t.Errorf("tools %v, want the tool with its schema bytes kept", qualifiedNames(snap))
	}
}

// manyEnumValues are more enum values than a Param keeps, and manyEnum their JSON list.
var manyEnumValues, manyEnum = func() ([]string, string) {
	var vals, quoted []string
	for i := range catalog.MaxEnumValues + 5 {
		vals = append(vals, fmt.Sprintf("v%d", i))
		quoted = append(quoted, fmt.Sprintf("%q", vals[i]))
	}
	return vals, strings.Join(quoted, ", ")
}()

func TestBuildOptionalFields(t *testing.T) {
	snap := build(t, "s",
		`{"name": "bare"}`,
		`{"name": "nulls", "description": null, "title": null, "inputSchema": null, "outputSchema": null, "annotations": null, "_meta": null}`,
		`{"name": "titled", "title": "Own Title", "annotations": {"title": "Other"}}`,
		`{"name": "untyped", "inputSchema": {"properties": {"q": {"title": "Query"}}}}`,
		`{"name": "nested", "inputSchema": {"type": "object", "required": ["filter", 5, "missing"], "properties": {
			"filter": {"type": "object", "properties": {"state": {"description": "open or closed"}, "labels": {"type": "array", "items": {"type": "object", "properties": {"name": {}}}}}},
			"deep": {"properties": {"a": {"properties": {"b": {"properties": {"c": {}}}}}}}}}}`,
		`{"name": "enums", "inputSchema": {"type": "object", "properties": {
			"unit": {"type": "string", "enum": ["celsius", "fahrenheit", 3, null, "", "\u00e9t\u00e9"]},
			"many": {"enum": [`+manyEnum+`]},
			"kinds": {"type": "array", "items": {"type": "string", "enum": ["issue", "pr"]}}}}}`,
	)
	tests := []struct {
		name     string
		title    string
		params   []catalog.Param
		required []string
	}{
		{"bare", "", nil, nil},
		{"nulls", "", nil, nil},
		{"titled", "Own Title", nil, nil},
		{"untyped", "", []catalog.Param{{Name: "q", Description: "Query"}}, nil},
		{"nested", "", []catalog.Param{
			{Name: "filter", Required: true},
			{Name: "filter.state", Description: "open or closed", Depth: 1},
			{Name: "filter.labels", Depth: 1},
			{Name: "filter.labels.name", Depth: 2},
			{Name: "deep"},
			{Name: "deep.a", Depth: 1},
			{Name: "deep.a.b", Depth: 2},
		}, []string{"filter", "missing"}},
		{"enums", "", []catalog.Param{
			{Name: "unit", Enum: []string{"celsius", "fahrenheit", "été"}},
			{Name: "many", Enum: manyEnumValues[:catalog.MaxEnumValues]},
			{Name: "kinds", Enum: []string{"issue", "pr"}},
		}, nil},
	}
	for i, tc := range tests {
		tl := snap.Tool(i)
		if tl.Name != tc.name || tl.Title != tc.title || !reflect.DeepEqual(tl.Params, tc.params) || !reflect.DeepEqual(tl.Required, tc.required) {
			t.Errorf("%s: title %q params %+v required %q; want %q %+v %q", tl.Name, tl.Title, tl.Params, tl.Required, tc.title, tc.params, tc.required)
		}
	}
	for _, tl := range snap.Tools()[:2] {
		if tl.InputSchema != nil || tl.OutputSchema != nil || tl.Annotations != nil || tl.Meta != nil || tl.Pinned {
			t.Errorf("%s: absent or null fields are kept: %+v", tl.Name, tl)
		}
		want := `{"name":"s__` + tl.Name + `","description":"","input_schema":{"type":"object"}}`
		if got := string(tl.Definition()); got != want {
			t.Errorf("definition %s, want %s", got, want)
		}
	}
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// checkNames fails the test unless every qualified name is valid for every client and
// unique, and resolves to its tool.
func checkNames(t testing.TB, snap *catalog.Snapshot) {
	t.Helper()
	seen := map[string]bool{}
	for i, tl := range snap.Tools() {
		if !validName.MatchString(tl.Qualified) {
			t.Errorf("invalid qualified name %q", tl.Qualified)
		}
		if seen[tl.Qualified] {
			t.Errorf("qualified name %q used twice", tl.Qualified)
		}
		seen[tl.Qualified] = true
		if tl.Index != i {
			t.Errorf("%s has index %d at position %d", tl.Qualified, tl.Index, i)
		}
		if got, err := snap.Lookup(tl.Qualified, nil); err != nil || got != tl {
			t.Errorf("Lookup(%q) = %v, %v", tl.Qualified, got, err)
		}
	}
}

func TestQualifiedNamesRealCatalogs(t *testing.T) {
	for _, files := range [][]string{
		{"../internal/builtin/catalogs/github-mcp-server.json", "../internal/builtin/catalogs/popular-servers.json", "../internal/builtin/catalogs/reference-servers.json"},
		{"../bench/livemcpbench/catalog.json"},
		{"../bench/bfcl/catalog.json"},
	} {
		snap, problems := catalog.LoadFiles(files...)
		if len(problems) != 0 {
			t.Errorf("%v: %v", files, problems)
		}
		if snap.Len() < 100 {
			t.Errorf("%v: only %d tools", files, snap.Len())
		}
		checkNames(t, snap)
	}
}

func TestSanitizedNameCollision(t *testing.T) {
	const dotted, plain = `{"name": "solve.quadratic_equation"}`, `{"name": "solve_quadratic_equation"}`
	for _, order := range [][]string{{dotted, plain}, {plain, dotted}} {
		snap := build(t, "math", order...)
		checkNames(t, snap)
		byName := map[string]string{}
		for _, tl := range snap.Tools() {
			byName[tl.Name] = tl.Qualified
		}
		if byName["solve_quadratic_equation"] != "math__solve_quadratic_equation" {
			t.Errorf("order %v: the valid name became %q", order, byName["solve_quadratic_equation"])
		}
		q := byName["solve.quadratic_equation"]
		if !strings.HasPrefix(q, "math__solve_quadratic_equation-") || q == "math__solve_quadratic_equation" {
			t.Errorf("order %v: the dotted name became %q", order, q)
		}
		if tl, err := snap.Lookup("solve.quadratic_equation", nil); err != nil || tl.Qualified != q {
			t.Errorf("bare lookup of the dotted name: %v, %v", tl, err)
		}
	}
	// Two names that both need sanitizing: the first keeps the plain form.
	snap := build(t, "s", `{"name": "a.b"}`, `{"name": "a b"}`, `{"name": "a/b"}`)
	checkNames(t, snap)
	if snap.Tool(0).Qualified != "s__a_b" || !strings.HasPrefix(snap.Tool(1).Qualified, "s__a_b-") || !strings.HasPrefix(snap.Tool(2).Qualified, "s__a_b-") {
		t.Errorf("names %v", qualifiedNames(snap))
	}
	// Sources naming one server are named together: an already-valid name keeps the
	// plain form even when a sanitized one came in an earlier source.
	sources, problems := catalog.Parse([]byte(`{"servers": [{"name": "s", "tools": [{"name": "a.b"}]}, {"name": "s", "tools": [{"name": "a_b"}]}]}`), "test", "")
	merged, more := catalog.Build(sources)
	if len(problems)+len(more) > 0 {
		t.Fatalf("problems: %v %v", problems, more)
	}
	checkNames(t, merged)
	if q := qualifiedNames(merged); len(q) != 2 || q[1] != "s__a_b" || !strings.HasPrefix(q[0], "s__a_b-") {
		t.Errorf("names across sources %v, want s__a_b-<hash> and s__a_b", q)
	}
	// The suffix depends only on the tool, so a name is stable across builds.
	again := build(t, "s", `{"name": "a.b"}`, `{"name": "a b"}`, `{"name": "a/b"}`)
	if !reflect.DeepEqual(qualifiedNames(snap), qualifiedNames(again)) {
		t.Errorf("names changed between builds: %v, %v", qualifiedNames(snap), qualifiedNames(again))
	}
}

func TestQualify(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"github", "create_issue", "github__create_issue"},
		{"s", "a.b", "s__a_b"},
		{"s", "get-thing", "s__get-thing"},
		{"s", "café", "s__caf_"},
		{"s", "日本", "s____"},
		{"s", "a b\tc", "s__a_b_c"},
		{"s", "\xff", "s___"},
	}
	for _, tc := range tests {
		if got := catalog.Qualify(tc.server, tc.tool); got != tc.want {
			t.Errorf("Qualify(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}

func TestLongNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 10) // 200 characters
	names := []string{long + "a", long + "b", long + ".a", strings.Repeat("x", catalog.MaxNameLen-len("s__")), strings.Repeat("y", catalog.MaxNameLen-len("s__")+1)}
	var tools []string
	for _, n := range names {
		tools = append(tools, `{"name": "`+n+`"}`)
	}
	snap := build(t, "s", tools...)
	checkNames(t, snap)
	for i, tl := range snap.Tools() {
		q := tl.Qualified
		if q != catalog.Qualify("s", names[i]) {
			t.Errorf("%s: Build named it %q, Qualify %q", names[i], q, catalog.Qualify("s", names[i]))
		}
		full := "s__" + strings.ReplaceAll(names[i], ".", "_")
		if len(full) <= catalog.MaxNameLen {
			if q != full {
				t.Errorf("a name that fits was changed: %q", q)
			}
			continue
		}
		if len(q) != catalog.MaxNameLen || !strings.HasPrefix(full, q[:catalog.MaxNameLen-9]) || !regexp.MustCompile(`-[0-9a-f]{8}$`).MatchString(q) {
			t.Errorf("long name %q: not the start of %q and a hash", q, full)
		}
	}
	// Stable: the same name gets the same qualified name in another catalog.
	other := build(t, "s", `{"name": "first"}`, tools[1])
	if other.Tool(1).Qualified != snap.Tool(1).Qualified {
		t.Errorf("unstable long name: %q vs %q", other.Tool(1).Qualified, snap.Tool(1).Qualified)
	}
	// A long server name leaves room for the tool: still valid and unique.
	ls := strings.Repeat("S", 300)
	snap2, problems := catalog.Build([]catalog.Source{source(ls, `{"name": "a"}`, `{"name": "b"}`)})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	checkNames(t, snap2)
}

func TestHash(t *testing.T) {
	base := func() []catalog.Source {
		return []catalog.Source{
			{Server: "one", Tools: []json.RawMessage{
				json.RawMessage(`{"name": "a", "description": "Alpha", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}`),
				json.RawMessage(`{"name": "b", "description": "Beta"}`),
			}},
			{Server: "two", Tools: []json.RawMessage{json.RawMessage(`{"name": "c", "_meta": {"k": 1}}`)}},
		}
	}
	hash := func(s []catalog.Source) string {
		t.Helper()
		snap, problems := catalog.Build(s)
		if len(problems) != 0 {
			t.Fatal(problems)
		}
		return snap.Hash()
	}
	h0 := hash(base())
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h0) {
		t.Fatalf("hash %q is not a hex SHA-256", h0)
	}
	if h := hash(base()); h != h0 {
		t.Errorf("equal content, different hash")
	}
	equal := base()
	equal[0].Origin, equal[1].Origin = "elsewhere", "other"
	equal[1].Server = "two" // same name
	if h := hash(equal); h != h0 {
		t.Errorf("the origin changed the hash")
	}
	changes := map[string]func(s []catalog.Source){
		"description": func(s []catalog.Source) {
			s[0].Tools[1] = json.RawMessage(`{"name": "b", "description": "Beta!"}`)
		},
		"schema": func(s []catalog.Source) {
			s[0].Tools[0] = json.RawMessage(`{"name": "a", "description": "Alpha", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}`)
		},
		"schema whitespace": func(s []catalog.Source) {
			s[0].Tools[0] = json.RawMessage(`{"name": "a", "description": "Alpha", "inputSchema": {"type": "object",  "properties": {"x": {"type": "string"}}}}`)
		},
		"server name": func(s []catalog.Source) { s[1].Server = "three" },
		"server pinned": func(s []catalog.Source) {
			s[1].AlwaysLoad = true
		},
		"tool pinned": func(s []catalog.Source) {
			s[1].Tools[0] = json.RawMessage(`{"name": "c", "_meta": {"k": 1, "anthropic/alwaysLoad": true}}`)
		},
		"tool removed": func(s []catalog.Source) { s[0].Tools = s[0].Tools[:1] },
		"tool order": func(s []catalog.Source) {
			s[0].Tools[0], s[0].Tools[1] = s[0].Tools[1], s[0].Tools[0]
		},
		"tool moved to another server": func(s []catalog.Source) {
			s[1].Tools = append(s[1].Tools, s[0].Tools[1])
			s[0].Tools = s[0].Tools[:1]
		},
		"meta": func(s []catalog.Source) {
			s[1].Tools[0] = json.RawMessage(`{"name": "c", "_meta": {"k": 2}}`)
		},
	}
	seen := map[string]string{h0: "base"}
	for name, change := range changes {
		s := base()
		change(s)
		h := hash(s)
		if prev, dup := seen[h]; dup {
			t.Errorf("%s: same hash as %s", name, prev)
		}
		seen[h] = name
	}
	// A problem tool is not part of the catalog, so it does not change the hash.
	s := base()
	s[0].Tools = append(s[0].Tools, json.RawMessage(`{"name": 5}`))
	if snap, _ := catalog.Build(s); snap.Hash() != h0 {
		t.Errorf("a tool that did not load changed the hash")
	}
}

func TestPinning(t *testing.T) {
	snap, problems := catalog.Build([]catalog.Source{
		{Server: "pinned", AlwaysLoad: true, Tools: []json.RawMessage{
			json.RawMessage(`{"name": "a"}`),
			json.RawMessage(`{"name": "b", "_meta": {"anthropic/alwaysLoad": false}}`),
		}},
		{Server: "free", Tools: []json.RawMessage{
			json.RawMessage(`{"name": "plain"}`),
			json.RawMessage(`{"name": "meta_true", "_meta": {"anthropic/alwaysLoad": true}}`),
			json.RawMessage(`{"name": "meta_spaced", "_meta": { "other": {"anthropic/alwaysLoad": false}, "anthropic/alwaysLoad" :  true }}`),
			json.RawMessage(`{"name": "meta_false", "_meta": {"anthropic/alwaysLoad": false}}`),
			json.RawMessage(`{"name": "meta_string", "_meta": {"anthropic/alwaysLoad": "true"}}`),
			json.RawMessage(`{"name": "meta_nested_only", "_meta": {"x": {"anthropic/alwaysLoad": true}}}`),
			json.RawMessage(`{"name": "annotation", "annotations": {"anthropic/alwaysLoad": true}}`),
			json.RawMessage(`{"name": "other_key", "_meta": {"alwaysLoad": true}}`),
		}},
	})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	want := map[string]bool{"a": true, "b": true, "meta_true": true, "meta_spaced": true}
	for _, tl := range snap.Tools() {
		if tl.Pinned != want[tl.Name] {
			t.Errorf("%s pinned = %v, want %v", tl.Qualified, tl.Pinned, want[tl.Name])
		}
	}
}

func lookupSnapshot(t testing.TB) *catalog.Snapshot {
	snap, problems := catalog.Build([]catalog.Source{
		source("alpha", `{"name": "x"}`, `{"name": "y"}`, `{"name": "a.b"}`),
		source("beta", `{"name": "x"}`, `{"name": "z"}`),
		source("gamma", `{"name": "x"}`),
	})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	return snap
}

func TestLookup(t *testing.T) {
	snap := lookupSnapshot(t)
	all := func(*catalog.Tool) bool { return true }
	hideBeta := func(tl *catalog.Tool) bool { return tl.Server != "beta" }
	onlyBeta := func(tl *catalog.Tool) bool { return tl.Server == "beta" }
	none := func(*catalog.Tool) bool { return false }
	tests := []struct {
		name    string
		lookup  string
		visible func(*catalog.Tool) bool
		want    string // qualified name found
		err     error
		message string
	}{
		{"qualified", "beta__x", nil, "beta__x", nil, ""},
		{"qualified, all visible", "alpha__y", all, "alpha__y", nil, ""},
		{"qualified sanitized", "alpha__a_b", nil, "alpha__a_b", nil, ""},
		{"unique bare", "y", nil, "alpha__y", nil, ""},
		{"unique bare of a sanitized name", "a.b", nil, "alpha__a_b", nil, ""},
		{"ambiguous bare", "x", nil, "", catalog.ErrAmbiguous, `"x" is offered by 3 servers; use one of alpha__x, beta__x, gamma__x`},
		{"ambiguous bare, one hidden", "x", hideBeta, "", catalog.ErrAmbiguous, "use one of alpha__x, gamma__x"},
		{"ambiguous bare, one visible", "x", onlyBeta, "beta__x", nil, ""},
		{"unknown", "nope", nil, "", catalog.ErrUnknownTool, `unknown tool "nope"`},
		{"empty", "", nil, "", catalog.ErrUnknownTool, ""},
		{"case matters", "ALPHA__Y", nil, "", catalog.ErrUnknownTool, ""},
		{"sanitized form is not a bare name", "a_b", nil, "", catalog.ErrUnknownTool, ""},
		{"hidden qualified", "beta__z", hideBeta, "", catalog.ErrUnknownTool, `"beta__z"`},
		{"hidden bare", "z", hideBeta, "", catalog.ErrUnknownTool, `"z"`},
		{"nothing visible", "alpha__x", none, "", catalog.ErrUnknownTool, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snap.Lookup(tc.lookup, tc.visible)
			if tc.err != nil {
				if got != nil || !errors.Is(err, tc.err) {
					t.Fatalf("Lookup(%q) = %v, %v; want %v", tc.lookup, got, err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.message) {
					t.Errorf("error %q lacks %q", err, tc.message)
				}
				if tc.visible != nil && !strings.Contains(tc.lookup, "beta") && strings.Contains(err.Error(), "beta") {
					t.Errorf("error %q reveals a hidden tool", err)
				}
				return
			}
			if err != nil || got == nil || got.Qualified != tc.want {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", tc.lookup, got, err, tc.want)
			}
		})
	}
}

func TestSetFilter(t *testing.T) {
	snap := lookupSnapshot(t)
	set := catalog.NewSet(snap)
	if set.Len() != 0 || set.Has(0) {
		t.Fatal("a new set is not empty")
	}
	set.Add(1)
	set.Add(4)
	set.Add(1)
	if set.Len() != 2 || !set.Has(1) || !set.Has(4) || set.Has(0) || set.Has(5) || set.Has(1000) {
		t.Errorf("set has the wrong members: len %d", set.Len())
	}
	var all *catalog.Set
	if !all.Has(0) || !all.Has(1<<20) {
		t.Error("a nil set does not have every tool")
	}
	if _, err := snap.Lookup("x", func(tl *catalog.Tool) bool { return set.Has(tl.Index) }); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Errorf("Lookup through a set: %v", err)
	}
}
