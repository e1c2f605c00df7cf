package gateway_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

// notesTools are a catalog server's tools, of which the scope of the differential tests
// has some (notesInScope) and not the others.
var notesTools = []string{
	`{"name": "create_note", "description": "Create a note with a title and a body.", "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}, "required": ["title"]}}`,
	`{"name": "create_folder", "description": "Create a folder for notes.", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}`,
	`{"name": "find_note", "description": "Find notes whose text contains the words given.", "inputSchema": {"type": "object", "properties": {"words": {"type": "string"}}}}`,
	`{"name": "delete_note", "description": "Delete a note for good: permanently remove it from the knowledge graph of notes.", "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}`,
	`{"name": "archive_everything", "description": "Archive every note, entity and relation, then compact the storage.", "inputSchema": {"type": "object"}}`,
	`{"name": "add_entities", "description": "Add entities to the graph of linked notes.", "inputSchema": {"type": "object", "properties": {"entities": {"type": "array"}}}}`,
}

// notesInScope are the notes tools the scope admits: notes__create_* and notes__find_note.
var notesInScope = map[string]bool{"create_note": true, "create_folder": true, "find_note": true}

// diffScope is the scope of the differential tests: one server whole and some tools of
// another.
var diffScope = policy.Scope{Servers: []string{"alpha"}, Tools: []string{"notes__create_*", "notes__find_note"}}

// notesSource is the notes catalog, or only its tools in scope.
func notesSource(onlyInScope bool) catalog.Source {
	src := catalog.Source{Server: "notes", Origin: "test"}
	for _, raw := range notesTools {
		var tool struct{ Name string }
		json.Unmarshal([]byte(raw), &tool)
		if !onlyInScope || notesInScope[tool.Name] {
			src.Tools = append(src.Tools, json.RawMessage(raw))
		}
	}
	return src
}

// diffQueries are what an attacker in a scoped session would ask to learn about the
// tools outside it: words only those tools use, their misspellings, parts and exact
// names, identifiers in a sentence, patterns, and words of its own tools.
var diffQueries = []string{
	// Its own tools.
	"add two numbers", "echo the text back", "create a note", "find notes", "folder",
	// Words only the other tools use: the real memory server, the built-in catalogs, the
	// notes tools out of scope.
	"create entities in the knowledge graph", "read the whole graph", "delete observations",
	"create a github issue", "list pull requests", "send a slack message", "archive everything",
	"permanently remove", "compact the storage",
	// Misspellings of both.
	"knowlege grpah", "entitys", "obsevrations", "githb isue", "ad nubmers", "ecko", "archve", "fodler",
	// Parts of names.
	"entit", "graph", "issu", "gro", "note", "_note", "crea",
	// Exact names of tools outside the scope, qualified and bare, alone and in a sentence.
	"memory__create_entities", "create_entities", "read_graph", "github__create_issue", "create_issue",
	"notes__delete_note", "delete_note", "notes__archive_everything", "please run create_entities now",
	"use readGraph then delete_note", "alpha__add", "add",
	// Patterns.
	"create.*entit", "^read_graph$", "(issue|graph)", "[a-z]+_note",
	// Odd ones.
	"the", "a b c", "12345", "échec", "グラフ", strings.Repeat("graph ", 80),
}

// diffRequests are the requests of the differential tests, each a tool and arguments:
// every query at two limits, then describes and calls of tools in and out of scope.
func diffRequests() [][2]any {
	var out [][2]any
	for _, q := range diffQueries {
		out = append(out, [2]any{"tool_search", map[string]any{"query": q}})
		out = append(out, [2]any{"tool_search", map[string]any{"query": q, "limit": 20}})
	}
	out = append(out, [2]any{"tool_search", map[string]any{"query": ""}})
	out = append(out, [2]any{"tool_search", map[string]any{"query": strings.Repeat("x", 501)}})
	for _, name := range []string{
		"alpha__add", "add", "notes__create_note", "create_note", "find_note",
		"memory__create_entities", "create_entities", "read_graph", "github__create_issue", "create_issue",
		"notes__delete_note", "delete_note", "notes__add_entities", "add_entities", "archive_everything", "nope",
	} {
		out = append(out, [2]any{"tool_describe", map[string]any{"name": name}})
		out = append(out, [2]any{"tool_call", map[string]any{"name": name, "arguments": map[string]any{}}})
		// A direct call of a tool that is not listed (tool search is on).
		out = append(out, [2]any{name, map[string]any{}})
	}
	out = append(out, [2]any{"tool_call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "hi"}}})
	return out
}

// answer is a session's whole answer to a request, as bytes: the result, or the
// protocol error.
func answer(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listing is a session's tools/list, as bytes.
func listing(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Tools)
	return string(b)
}

// sameAnswers fails the test for every request that scoped and only answer differently.
func sameAnswers(t *testing.T, when string, scoped, only *mcp.ClientSession) {
	t.Helper()
	if got, want := listing(t, scoped), listing(t, only); got != want {
		t.Errorf("%s: tools/list of the scoped session:\n%s\nof a gateway with only its tools:\n%s", when, got, want)
	}
	diffs := 0
	for _, r := range diffRequests() {
		tool, args := r[0].(string), r[1]
		got, want := answer(t, scoped, tool, args), answer(t, only, tool, args)
		if got != want {
			diffs++
			b, _ := json.Marshal(args)
			t.Errorf("%s: %s %s\nthe scoped session got:\n  %s\na gateway with only its tools gives:\n  %s", when, tool, b, got, want)
		}
	}
	if diffs > 0 {
		t.Logf("%s: %d of %d answers differ", when, diffs, len(diffRequests()))
	}
}

// A scoped profile's answers depend on its scope's tools alone: a session of a profile
// scoped to one server and some tools of another, on a gateway that also has the real
// npm memory server, the built-in catalogs (hundreds of tools) and the other tools of
// the second server, gets byte for byte what an unscoped session of a gateway with only
// the scope's tools gets, for tools/list and for searches (words, misspellings, parts
// of names, exact names of the tools outside the scope, patterns), describes and calls.
// It still does once the memory server is down, which must not show through either.
func TestScopedAnswersAreThoseOfItsTools(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory, pidFile := pidWrapped(t, "memory", mcmd, margs)
	builtins, problems := builtin.Sources()
	if len(problems) > 0 {
		t.Fatalf("the built-in catalogs have problems: %v", problems)
	}
	var others []catalog.Source
	for _, src := range builtins {
		if src.Server != "memory" && src.Server != "alpha" && src.Server != "notes" {
			others = append(others, src)
		}
	}
	full := startGateway(t, &config.Config{
		Servers:  []config.Server{testServer("alpha", "basic"), memory},
		Profiles: map[string]config.Profile{"scoped": {Scope: diffScope}},
	}, gateway.Options{Mode: policy.On, Catalogs: append(others, notesSource(false)), BackoffMin: time.Minute, BackoffMax: time.Minute})
	only := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}},
		gateway.Options{Mode: policy.On, Catalogs: []catalog.Source{notesSource(true)}})
	if n := full.g.Catalog().Len(); n < 300 {
		t.Fatalf("the full gateway has %d tools; the test needs many outside the scope", n)
	}
	scoped, unscoped := full.client("scoped", nil), only.client("", nil)
	sameAnswers(t, "memory up", scoped, unscoped)

	killServer(t, pidFile)
	waitFor(t, "memory to be down", func() bool { return status(full, "memory").State == gateway.Failed })
	sameAnswers(t, "memory down", scoped, unscoped)
}

// With embeddings, a scoped profile's searches fuse words with the vectors of its own
// tools, the rows of the catalog's vectors: byte for byte what a gateway with only the
// scope's tools answers, once both have their vectors (a query only vectors can answer
// finds its tool in the scoped session too).
func TestScopedEmbeddingsAreThoseOfItsTools(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	c, err := embed.New(embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model})
	if err != nil {
		t.Fatal(err)
	}
	camera := catalog.Source{Server: "camera", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "take_picture", "description": "Take a picture with the device camera.", "inputSchema": {"type": "object"}}`),
		json.RawMessage(`{"name": "record_video", "description": "Record a video clip.", "inputSchema": {"type": "object"}}`),
	}}
	photos := catalog.Source{Server: "photos", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "upload_image", "description": "Upload an image to the shared album.", "inputSchema": {"type": "object"}}`),
		json.RawMessage(`{"name": "take_backup", "description": "Take a backup of every photo.", "inputSchema": {"type": "object"}}`),
	}}
	builtins, _ := builtin.Sources()
	scope := policy.Scope{Servers: []string{"camera", "notes"}}
	opts := func(sources ...catalog.Source) gateway.Options {
		return gateway.Options{Mode: policy.On, Catalogs: sources, Embed: c, EmbedCacheDir: t.TempDir(), EmbedQueryTimeout: 10 * time.Second}
	}
	full := startGateway(t, &config.Config{Profiles: map[string]config.Profile{"scoped": {Scope: scope}}},
		opts(append(append([]catalog.Source{camera, photos}, builtins...), notesSource(false))...))
	only := startGateway(t, &config.Config{}, opts(camera, notesSource(false)))
	scoped, unscoped := full.client("scoped", nil), only.client("", nil)
	for _, cs := range []*mcp.ClientSession{scoped, unscoped} {
		waitFor(t, "the vectors of the scope's tools", func() bool { return searchFinds(t, cs, "grab a selfie", "camera__take_picture") })
	}
	for _, q := range append(diffQueries, "grab a selfie", "snap a photo", "capture an image", "upload a picture", "take a backup") {
		for _, limit := range []int{5, 20} {
			args := map[string]any{"query": q, "limit": limit}
			if got, want := answer(t, scoped, "tool_search", args), answer(t, unscoped, "tool_search", args); got != want {
				t.Errorf("tool_search %q (limit %d)\nthe scoped session got:\n  %s\na gateway with only its tools gives:\n  %s", q, limit, got, want)
			}
		}
	}
}

// With search learning from a shared log, a scoped profile's searches learn from the
// queries that led to its own tools alone: byte for byte what a gateway with only the
// scope's tools answers from the same log, once both have learned (the learned query
// finds its tool), though the log also links queries to tools outside the scope.
func TestScopedLearningIsThatOfItsTools(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	for _, e := range []struct{ tool, query string }{
		{"notes__create_note", "zorblax frobnicate"},
		{"notes__delete_note", "wipe the slate clean"},
		{"notes__delete_note", "zorblax quux"},
		{"notes__archive_everything", "zorblax frobnicate everything"},
		{"github__create_issue", "file a zorblax"},
	} {
		for range 3 {
			log.Call(searchlog.Call{Time: time.Now(), Source: "gateway", Tool: e.tool, Server: strings.Split(e.tool, "__")[0], Outcome: searchlog.OutcomeOK, Rank: 2, Query: e.query})
		}
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	builtins, _ := builtin.Sources()
	opts := func(sources ...catalog.Source) gateway.Options {
		// The evidence is read once: the searches below add none that would be read.
		return gateway.Options{Mode: policy.On, Catalogs: sources, SearchLog: log, LearnInterval: time.Hour}
	}
	scope := policy.Scope{Tools: []string{"notes__create_*", "notes__find_note"}}
	full := startGateway(t, &config.Config{Profiles: map[string]config.Profile{"scoped": {Scope: scope}}},
		opts(append(builtins, notesSource(false))...))
	only := startGateway(t, &config.Config{}, opts(notesSource(true)))
	scoped, unscoped := full.client("scoped", nil), only.client("", nil)
	for _, cs := range []*mcp.ClientSession{scoped, unscoped} {
		waitFor(t, "the learned index", func() bool { return searchFinds(t, cs, "zorblax frobnicate", "notes__create_note") })
	}
	for _, q := range append(diffQueries, "zorblax", "zorblax frobnicate", "wipe the slate clean", "zorblax quux", "file a zorblax", "frobnicate everything") {
		for _, limit := range []int{5, 20} {
			args := map[string]any{"query": q, "limit": limit}
			if got, want := answer(t, scoped, "tool_search", args), answer(t, unscoped, "tool_search", args); got != want {
				t.Errorf("tool_search %q (limit %d)\nthe scoped session got:\n  %s\na gateway with only its tools gives:\n  %s", q, limit, got, want)
			}
		}
	}
}
