package gateway

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolshedInstructions are toolshed's own instructions to the model.
const toolshedInstructions = "toolshed aggregates several MCP servers. When tool_search is listed, more tools are available " +
	"than are shown: search for the tool you need, read its schema with tool_describe, and run it with tool_call."

// maxServerInstructions is how much of one server's instructions reaches the model:
// Claude Code's cap on a server's, so that a server behind toolshed says no more than it
// would to Claude Code directly. maxInstructions bounds them all together.
const (
	maxServerInstructions = 2048
	maxInstructions       = 16 << 10
)

// instructions are toolshed's instructions for profile: its own, then each server's the
// profile may use that gave some (the instructions of its initialize or server/discover
// result), under its name, each cut at maxServerInstructions, in the config's order, all
// within maxInstructions. A server not up when a client connects is left out for that
// client.
func (g *Gateway) instructions(profile string) string {
	var b strings.Builder
	b.WriteString(toolshedInstructions)
	scope := g.cfg.Profiles[profile].Scope
	for _, u := range g.upstreams {
		if !scope.AllowsServer(u.cfg.Name) {
			continue
		}
		l := u.currentLink()
		if l == nil || l.cs == nil {
			continue
		}
		ir := l.cs.InitializeResult()
		if ir == nil || strings.TrimSpace(ir.Instructions) == "" {
			continue
		}
		part := "\n\n## Server " + u.cfg.Name + "\n" + cutText(strings.TrimSpace(ir.Instructions), maxServerInstructions)
		if b.Len()+len(part) > maxInstructions {
			b.WriteString("\n\n(More servers gave instructions; they did not fit.)")
			break
		}
		b.WriteString(part)
	}
	return b.String()
}

// cutText cuts s to at most max bytes, on a rune boundary, marking the cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = " […]"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// instructionsMiddleware is a receiving middleware that answers initialize and
// server/discover with instructions (the SDK's are fixed when the server is made).
func (ps *profileServer) instructionsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = ps.g.instructions(ps.profile)
		case *mcp.DiscoverResult:
			r.Instructions = ps.g.instructions(ps.profile)
		}
		return res, err
	}
}
