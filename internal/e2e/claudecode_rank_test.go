//go:build e2e && unix

package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/fakellm"
)

// TestClaudeCodeProxyRanksSearch drives the real Claude Code through toolshed proxy
// given the same MCP servers (--config, Claude Code's own MCP config): the model calls
// Claude Code's ToolSearch with words, toolshed answers with its ranking (the call
// reaches Claude Code as "select:" of toolshed's best tools, which Claude Code loads),
// the model calls the memory server's create_entities among them, and Claude Code runs
// it. The query is worded as people write, not as the tool is named ("creating",
// "entity"): Claude Code's own keyword points, with no stemming, do not put
// create_entities first for it, and with --client-search off the search is Claude
// Code's, as before. With an Anthropic and an OpenAI upstream.
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeProxyRanksSearch -v
func TestClaudeCodeProxyRanksSearch(t *testing.T) {
	for _, kind := range []string{"anthropic", "openai"} {
		for _, on := range []bool{true, false} {
			name := kind
			if !on {
				name += "-off"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testClaudeCodeProxyRanks(t, kind, on)
			})
		}
	}
}

const ccRankQuery = `{"query":"creating an entity with observations in my memory graph","max_results":3}`

func testClaudeCodeProxyRanks(t *testing.T, kind string, on bool) {
	entities := `{"entities":[{"name":"toolshed","entityType":"project","observations":["ranked by toolshed through Claude Code's ToolSearch"]}]}`
	replies := []fakellm.Reply{
		fakellm.Call("Let me find a tool.", "toolu_rank_01", "ToolSearch", ccRankQuery),
		fakellm.Call("", "toolu_rank_02", "mcp__memory__create_entities", entities),
		fakellm.Say(ccProxyAnswer),
	}
	model, upstreamURL := startScriptedModel(t, kind, replies...)
	config, memoryFile := ccMCPConfig(t)
	args := []string{"--config", config}
	if !on {
		args = []string{"--client-search", "off"}
	}
	proxyURL, proxyLog := startToolshedProxy(t, kind, upstreamURL, args...)
	var ccArgs []string
	if kind == "openai" {
		ccArgs = []string{"--model", "qwen3-coder"}
	}
	res := runClaudeCodeExit(t, !on, proxyURL, config, "Remember that toolshed ranks Claude Code's searches.", nil, ccArgs)
	defer func() {
		if t.Failed() {
			t.Logf("toolshed proxy's log:\n%s", proxyLog)
		}
	}()
	calls := upstreamCalls(t, model.Requests())
	if len(calls) < 2 {
		t.Fatalf("the model got %d requests, want the search's answer at least: %+v", len(calls), res)
	}
	// What the model got for its search: Claude Code's tool_reference blocks, which
	// the proxy gives the model as "Tool NAME is loaded" lines.
	found := regexp.MustCompile(`Tool (mcp__[A-Za-z0-9_-]+|[A-Za-z]+) is loaded`).FindAllStringSubmatch(string(calls[1].raw), -1)
	var names []string
	for _, m := range found {
		names = append(names, m[1])
	}
	t.Logf("--client-search %v: the search found %v", map[bool]string{true: "on", false: "off"}[on], names)
	// create_entities is there twice: the memory server's, and the copy in the
	// built-in catalog toolshed serve lists (server "catalog").
	if !on {
		if len(names) > 0 && strings.HasSuffix(names[0], "__create_entities") {
			t.Errorf("Claude Code's own search put create_entities first; this query no longer shows what toolshed's ranking adds")
		}
		return
	}
	if len(names) != 3 || !strings.HasSuffix(names[0], "__create_entities") || !slices.Contains(names, "mcp__memory__create_entities") {
		t.Fatalf("the model got %v for its search, want toolshed's 3 best: a create_entities first, the memory server's among them", names)
	}
	// The model reads its own words, not the selection Claude Code got.
	if !strings.Contains(string(calls[1].raw), "creating an entity with observations in my memory graph") || strings.Contains(string(calls[1].raw), "select:mcp__") {
		t.Errorf("the model did not read its search as it made it:\n%s", calls[1].raw)
	}
	// Claude Code loaded them itself: their definitions came with its next request.
	for _, n := range names {
		if calls[1].tool(n) == nil {
			t.Errorf("%s was found but the model did not get its definition; it got %v", n, calls[1].toolNames())
		}
	}
	if res.Type != "result" || res.Subtype != "success" || res.IsError || res.Result != ccProxyAnswer {
		t.Errorf("Claude Code's result: %+v, want success with %q", res, ccProxyAnswer)
	}
	if !toolResultContains(calls[len(calls)-1], kind, "toolu_rank_02", "ranked by toolshed") {
		t.Errorf("Claude Code did not run create_entities for the model")
	}
	if graph, err := os.ReadFile(memoryFile); err != nil || !strings.Contains(string(graph), "ranked by toolshed through Claude Code") {
		t.Errorf("the memory server's graph (%v): %s", err, graph)
	}
	// The everything server lists get-roots-list only to a client with roots, as Claude
	// Code is and the proxy's own listing is not: that one tool is ranked by its name.
	if strings.Contains(proxyLog.String(), "left to it") {
		t.Errorf("the proxy left the search to Claude Code:\n%s", proxyLog)
	}
}
