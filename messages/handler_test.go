package messages_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
)

// The HTTP front: headers, count_tokens, the client key, unknown routes.

// TestHeaders checks that the client's anthropic-version and anthropic-beta reach the
// upstream, and its key does not: the upstream gets the proxy's own key.
func TestHeaders(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"))
	_, err := h.client.Messages.New(context.Background(), params("bm25", ask("hi")), option.WithHeader("anthropic-beta", "advanced-tool-use-2025-11-20"), option.WithHeader("anthropic-version", "2023-06-01"))
	if err != nil {
		t.Fatal(err)
	}
	got := h.model.Requests()[0].Header
	if got.Get("anthropic-beta") != "advanced-tool-use-2025-11-20" || got.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("headers not forwarded: beta %q version %q", got.Get("anthropic-beta"), got.Get("anthropic-version"))
	}
	if got.Get("x-api-key") != "upstream-key" {
		t.Errorf("x-api-key %q, want the proxy's upstream key", got.Get("x-api-key"))
	}
	if strings.Contains(fmt.Sprint(got), "client-key") {
		t.Errorf("the client's key reached the upstream: %v", got)
	}
}

func TestCountTokens(t *testing.T) {
	h := newHarness(t)
	n, err := h.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "fake-model", Messages: []anthropic.MessageParam{ask("What's the weather?")},
		Tools: []anthropic.MessageCountTokensToolUnionParam{
			{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{Type: "tool_search_tool_bm25_20251119"}},
			{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}, DeferLoading: anthropic.Bool(true)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := h.model.Requests()[0].Body
	if want := int64(fakellm.InputTokens(body)); n.InputTokens != want || bytes.Contains(body, []byte("get_weather")) {
		t.Errorf("count_tokens %d (want %d) over %s; the deferred tool must not be counted", n.InputTokens, want, body)
	}
}

// TestClientKey checks that a proxy with a ClientKey answers only clients that send it.
func TestClientKey(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"))
	h.proxy.ClientKey = "client-key"
	srv := httptest.NewServer(h.proxy.Handler())
	defer srv.Close()
	for _, c := range []struct {
		key  string
		want bool
	}{{"client-key", true}, {"wrong", false}, {"", false}} {
		opts := []option.RequestOption{option.WithBaseURL(srv.URL), option.WithMaxRetries(0), option.WithAPIKey(c.key)}
		client := anthropic.NewClient(opts...)
		_, err := client.Messages.New(context.Background(), params("bm25", ask("hi")))
		var ae *anthropic.Error
		switch {
		case c.want && err != nil:
			t.Errorf("key %q: %v", c.key, err)
		case !c.want && (!errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error"):
			t.Errorf("key %q: got %v, want 401 authentication_error", c.key, err)
		}
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1 (only the authenticated one)", n)
	}
}

func TestNotFound(t *testing.T) {
	h := newHarness(t)
	_, err := h.client.Models.List(context.Background(), anthropic.ModelListParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
		t.Errorf("got %v, want 404 not_found_error", err)
	}
}
