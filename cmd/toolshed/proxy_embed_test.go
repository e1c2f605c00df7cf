package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// proxySelfie sends, through a toolshed proxy binary at addr in front of a model that
// searches "grab a selfie" with tool_search_tool_bm25, a request whose deferred tools
// are a camera and a mailer, and returns the tools the search found.
func proxySelfie(t *testing.T, bin string, env []string, extra ...string) ([]string, *testupstream.SyncBuffer) {
	t.Helper()
	m := fakellm.NewAnthropic(
		fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"grab a selfie"}`),
		fakellm.Say("done"))
	up := httptest.NewServer(m)
	t.Cleanup(up.Close)
	addr, stderr := startProxy(t, bin, env, append([]string{"--upstream-url", up.URL}, extra...)...)
	client := anthropic.NewClient(option.WithBaseURL("http://"+addr), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Take my picture."))},
		Tools: []anthropic.ToolUnionParam{
			{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{Type: "tool_search_tool_bm25_20251119"}},
			{OfTool: &anthropic.ToolParam{Name: "take_picture", Description: anthropic.String("Take a picture with the device camera"),
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}, DeferLoading: anthropic.Bool(true)}},
			{OfTool: &anthropic.ToolParam{Name: "send_email", Description: anthropic.String("Send an email"),
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"to": map[string]any{"type": "string"}}}, DeferLoading: anthropic.Bool(true)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, b := range msg.Content {
		if b.Type == "tool_search_tool_result" {
			for _, r := range b.AsToolSearchToolResult().Content.ToolReferences {
				found = append(found, r.ToolName)
			}
		}
	}
	return found, stderr
}

// TestProxyEmbed: the proxy binary with --embed-* finds, with tool_search_tool_bm25, a
// tool that shares no word with the query, sending the key from
// TOOLSHED_EMBED_API_KEY and printing the first embedding's progress; a restarted
// proxy takes the tools' vectors from the file cache and embeds only the query; with
// the endpoint down it answers with words alone and warns once.
func TestProxyEmbed(t *testing.T) {
	bin := toolshedBinary(t)
	srv := embedtest.Start()
	defer srv.Close()
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "TOOLSHED_EMBED_API_KEY=embed-key-1"}
	flags := []string{"--embed-url", srv.URL + "/v1/embeddings", "--embed-model", embedtest.Model, "--embed-query-timeout", "30s"}
	found, stderr := proxySelfie(t, bin, env, flags...)
	if len(found) == 0 || found[0] != "take_picture" {
		t.Fatalf("the search found %v, want take_picture first; stderr:\n%s", found, stderr)
	}
	if !strings.Contains(stderr.String(), "embedding tools with test-embed: 2/2") {
		t.Errorf("no progress of the first embedding on stderr:\n%s", stderr)
	}
	for _, r := range srv.Requests() {
		if r.Authorization != "Bearer embed-key-1" {
			t.Errorf("the endpoint got Authorization %q, want the key from TOOLSHED_EMBED_API_KEY", r.Authorization)
		}
	}
	srv.Reset()
	if found, _ := proxySelfie(t, bin, env, flags...); len(found) == 0 || found[0] != "take_picture" {
		t.Fatalf("restarted: found %v", found)
	}
	if r := srv.Requests(); len(r) != 1 || len(r[0].Input) != 1 || r[0].Input[0] != "grab a selfie" {
		t.Errorf("the restarted proxy embedded %+v; want the query alone", r)
	}

	down := httptest.NewServer(nil)
	down.Close()
	flags[1] = down.URL + "/v1/embeddings"
	found, stderr = proxySelfie(t, bin, env, flags...)
	if len(found) != 0 {
		t.Errorf("with the endpoint down the search found %v; words alone find nothing", found)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "messages request") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	// The tools' vectors are in the cache: the query's embedding is what fails.
	if n := strings.Count(stderr.String(), "level=WARN"); n != 1 || !strings.Contains(stderr.String(), "searching with words (BM25F) alone") {
		t.Errorf("%d warnings, want 1:\n%s", n, stderr)
	}
}
