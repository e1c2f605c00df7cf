package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/policy"
)

// TestToolSearchEmbeddings: with an embeddings endpoint, tool_search finds a tool that
// shares no word with the query once the catalog is embedded (in the background); when
// the endpoint then fails, it answers with words alone and logs that once.
func TestToolSearchEmbeddings(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	c, err := embed.New(embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.Source{Server: "camera", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "take_picture", "description": "Take a picture with the device camera.", "inputSchema": {"type": "object"}}`),
		json.RawMessage(`{"name": "record_video", "description": "Record a video clip.", "inputSchema": {"type": "object"}}`),
	}}
	mail := catalog.Source{Server: "mail", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "send", "description": "Send an email to a recipient.", "inputSchema": {"type": "object"}}`),
	}}
	h := startGateway(t, &config.Config{}, gateway.Options{Mode: policy.On, Catalogs: []catalog.Source{cat, mail},
		Embed: c, EmbedCacheDir: t.TempDir(), EmbedQueryTimeout: 200 * time.Millisecond})
	cs := h.client("", nil)
	found := false
	for i := 0; i < 300 && !found; i++ {
		if found = searchFinds(t, cs, "grab a selfie", "camera__take_picture"); !found {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !found {
		t.Fatalf("tool_search never found camera__take_picture by meaning; log:\n%s", h.log.String())
	}
	srv.SetMode(embedtest.Garbage, 0)
	for range 3 {
		if searchFinds(t, cs, "grab a selfie", "camera__take_picture") {
			t.Fatal("with the endpoint failing, words alone still found the tool by meaning")
		}
		if !searchFinds(t, cs, "send an email", "mail__send") {
			t.Fatal("with the endpoint failing, words alone did not find mail__send")
		}
	}
	if n := strings.Count(h.log.String(), "embedding endpoint returned garbage"); n != 1 {
		t.Fatalf("%d warnings, want 1; log:\n%s", n, h.log.String())
	}
}
