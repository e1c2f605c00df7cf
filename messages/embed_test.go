package messages_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// withCamera is the tools of kind plus a deferred tool that shares no word with
// "grab a selfie" but means it to the embedding model (embedtest.Synonyms).
func withCamera(kind string) []anthropic.ToolUnionParam {
	return append(tools(kind), anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: "screen_capture", Description: anthropic.String("Take an image of the display"),
		InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{}},
		DeferLoading: anthropic.Bool(true),
	}})
}

// embedHarness is a proxy whose tool_search_tool_bm25 fuses words with the embeddings
// of srvURL (an embedtest server, or a closed one), its log in the returned buffer.
func embedHarness(t *testing.T, srvURL string, replies ...fakellm.Reply) (*harness, *testupstream.SyncBuffer) {
	t.Helper()
	h := newHarness(t, replies...)
	c, err := embed.New(embed.Options{URL: srvURL + "/api/embed", Model: embedtest.Model})
	if err != nil {
		t.Fatal(err)
	}
	var logs testupstream.SyncBuffer
	h.proxy.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h.proxy.Embed = c
	// Generous: the first search of a tools list waits this long for its vectors, and
	// the machine is shared; the answer never depends on the wait but for its end.
	h.proxy.EmbedQueryTimeout = 30 * time.Second
	h.proxy.EmbedBuild = embed.BuildOptions{CacheDir: t.TempDir()}
	return h, &logs
}

// TestBM25WithEmbeddings: tool_search_tool_bm25 finds, through the embeddings, a tool
// that shares no word with the query, and the upstream model is then given that tool;
// the same request with words alone finds nothing.
func TestBM25WithEmbeddings(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	replies := func() []fakellm.Reply {
		return []fakellm.Reply{
			fakellm.Call("Let me find a tool.", "toolu_1", "tool_search_tool_bm25", `{"query":"grab a selfie"}`),
			fakellm.Call("", "toolu_2", "screen_capture", `{}`),
		}
	}
	req := anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 1024, Tools: withCamera("bm25"),
		Messages: []anthropic.MessageParam{ask("Show me what is on my screen.")}}
	for _, stream := range []bool{false, true} {
		h, logs := embedHarness(t, srv.URL, replies()...)
		msg, err := h.send(t, stream, req)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		got := shape(t, msg)
		if len(got) != 4 || !strings.HasPrefix(got[2], "result(screen_capture") || got[3] != "tool_use(screen_capture)" {
			t.Fatalf("stream=%v: content %q; want the search to find screen_capture first, then its call", stream, got)
		}
		seen := upstreamTools(h)
		if len(seen) != 2 || !slices.Contains(seen[1], "screen_capture") {
			t.Errorf("stream=%v: the model saw %q; want screen_capture loaded on its second call", stream, seen)
		}
		// The tool_reference blocks the model received are the fused ranking's, in order.
		refs := strings.TrimSuffix(strings.TrimPrefix(got[2], "result("), ")")
		var sent []string
		for _, m := range h.model.Bodies()[1]["messages"].([]any) {
			for _, b := range contentBlocks(m) {
				if b["type"] != "tool_result" {
					continue
				}
				for _, c := range contentBlocks(b) {
					for _, line := range strings.Split(c["text"].(string), "\n") {
						if name, _, ok := strings.Cut(strings.TrimPrefix(line, "- "), ":"); ok && strings.HasPrefix(line, "- ") {
							sent = append(sent, name)
						}
					}
				}
			}
		}
		if len(sent) == 0 || strings.Join(sent, ",") != refs {
			t.Errorf("stream=%v: the model was given the references %q; the client %q", stream, sent, refs)
		}
		if strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("stream=%v: warnings with a working endpoint:\n%s", stream, logs)
		}
	}
	// Words alone: the same request finds nothing.
	h := newHarness(t, fakellm.Call("Let me find a tool.", "toolu_1", "tool_search_tool_bm25", `{"query":"grab a selfie"}`), fakellm.Say("No tool."))
	msg, err := h.send(t, false, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); len(got) < 3 || got[2] != "result()" {
		t.Fatalf("words alone: %q; the test's query must share no word with screen_capture", got)
	}
}

// contentBlocks returns a message's content blocks as decoded JSON objects.
func contentBlocks(m any) []map[string]any {
	var out []map[string]any
	if c, ok := m.(map[string]any)["content"].([]any); ok {
		for _, b := range c {
			if o, ok := b.(map[string]any); ok {
				out = append(out, o)
			}
		}
	}
	return out
}

// TestBM25EmbeddingsDown: with the endpoint down, tool_search_tool_bm25 answers as
// words alone do, and the proxy warns once however many requests come.
func TestBM25EmbeddingsDown(t *testing.T) {
	srv := embedtest.Start()
	url := srv.URL
	srv.Close()
	search := fakellm.Call("Let me find a tool.", "toolu_1", "tool_search_tool_bm25", `{"query":"current weather city"}`)
	call := fakellm.Call("", "toolu_2", "get_weather", `{"city":"Paris"}`)
	h, logs := embedHarness(t, url, search, call, search, call, search, call)
	for i := range 3 {
		msg, err := h.send(t, i == 1, params("bm25", ask("What's the weather in Paris?")))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := []string{"text", `server_tool_use(tool_search_tool_bm25 {"query":"current weather city"})`, "result(get_weather,get_forecast)", "tool_use(get_weather)"}
		if got := shape(t, msg); !slices.Equal(got, want) {
			t.Fatalf("request %d: %q, want words alone's %q", i, got, want)
		}
	}
	if n := strings.Count(logs.String(), "embedding the deferred tools failed"); n != 1 {
		t.Errorf("%d warnings for a dead endpoint over 3 requests, want 1:\n%s", n, logs)
	}
}

// TestRegexStaysLexical: with embeddings on, tool_search_tool_regex matches patterns
// and never embeds its pattern as a query.
func TestRegexStaysLexical(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	h, _ := embedHarness(t, srv.URL,
		fakellm.Call("Let me find a tool.", "toolu_1", "tool_search_tool_regex", `{"pattern":"snapshot"}`),
		fakellm.Say("No tool."))
	msg, err := h.send(t, false, anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 1024, Tools: withCamera("regex"),
		Messages: []anthropic.MessageParam{ask("Take a snapshot.")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); len(got) < 3 || got[2] != "result()" {
		t.Errorf("regex search: %q, want no match for a pattern no tool contains", got)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("regex search sent %d requests to the embedding endpoint, want 0", n)
	}
}

// TestClientSearchWithEmbeddings: with an embedding endpoint, the proxy's answer to
// Claude Code's search fuses words and vectors as tool_search_tool_bm25 does: a query
// that shares no word with a tool finds it through the embeddings, where words alone
// find nothing and leave the search to Claude Code.
func TestClientSearchWithEmbeddings(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	sources, _ := catalog.Parse([]byte(`{"servers":[{"name":"screen","tools":[
		{"name":"screen_capture","description":"Take an image of the display","inputSchema":{"type":"object"}},
		{"name":"list_windows","description":"List the open windows","inputSchema":{"type":"object"}}]}]}`), "test", "")
	snap, _ := catalog.Build(sources)
	announce := `{"role":"system","content":"The following deferred tools are now available via ToolSearch:\nmcp__screen__screen_capture\nmcp__screen__list_windows"}`
	call := searchCall(`{"query":"grab a selfie","max_results":1}`)
	for _, embeddings := range []bool{false, true} {
		h, _ := embedHarness(t, srv.URL, call)
		if !embeddings {
			h.proxy.Embed = nil
		}
		h.proxy.ClientTools = snap
		msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, announce))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"query":"grab a selfie","max_results":1}`
		if embeddings {
			want = `{"query":"select:mcp__screen__screen_capture","max_results":1}`
		}
		if got := toolUseInput(t, msg); !sameJSON(got, want) {
			t.Errorf("embeddings %v: the client got ToolSearch input %s, want %s", embeddings, got, want)
		}
	}
}
