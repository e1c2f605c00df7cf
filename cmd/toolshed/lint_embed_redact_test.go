package main

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/embedtest"
)

// TestLintEmbedHidesURLPassword: lint's finding on an embedding endpoint that does not
// answer names it without the password its URL carries (a key).
func TestLintEmbedHidesURLPassword(t *testing.T) {
	srv := embedtest.Start()
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	got := checkEmbed(t.Context(), config.Embed{URL: "http://key:sk-lint-secret@" + host + "/v1/embeddings", Model: embedtest.Model, APIKeyEnv: embed.APIKeyEnv})
	if len(got) != 1 || !strings.Contains(got[0].Message, "does not answer") || strings.Contains(got[0].Message+got[0].Fix, "sk-lint-secret") {
		t.Errorf("finding %+v: want one that the endpoint does not answer, without its password", got)
	}
}
