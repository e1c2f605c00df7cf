package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/override"
	"github.com/toolshed/toolshed/search"
)

// The config's overrides (see package override) are applied to the live tool lists at
// every assembly, before the catalog is built: search indexes their words, tools they
// hide leave the catalog, and only rules with show change a definition. The hidden
// tools are kept aside, so that a call of one is told it is hidden rather than that no
// such tool exists, which would send the model searching for it.

// applyOverrides applies the config's overrides to sources, reporting (once per rule)
// a rule that selects no tool once every upstream has started or failed.
func (g *Gateway) applyOverrides(sources []catalog.Source, settled bool) override.Result {
	res := override.Apply(g.cfg.Overrides, sources)
	if settled {
		g.unmatched.report(g, res.Selected)
	}
	return res
}

// unmatchedOverrides remembers which rules were reported as selecting nothing.
type unmatchedOverrides struct {
	mu       sync.Mutex
	reported map[int]bool
}

func (u *unmatchedOverrides) report(g *Gateway, selected []int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, n := range selected {
		if n > 0 || u.reported[i] {
			continue
		}
		if u.reported == nil {
			u.reported = map[int]bool{}
		}
		u.reported[i] = true
		r := g.cfg.Overrides[i]
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("overrides[%d]", i)
		}
		g.logf("warning: %s (servers %s, tools %s) selects no tool of the servers that are up, so it changes nothing; check its globs against the qualified names (server__tool) that toolshed search lists",
			name, patterns(r.Servers), patterns(r.Tools))
	}
}

// patternsShown bounds how many of a rule's patterns a warning shows.
const patternsShown = 10

// patterns shows a rule's globs in a warning, each quoted and cut short (see
// override.Quote), and at most patternsShown of them.
func patterns(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	shown := make([]string, 0, min(len(list), patternsShown))
	for _, p := range list[:min(len(list), patternsShown)] {
		shown = append(shown, override.Quote(p))
	}
	more := ""
	if len(list) > patternsShown {
		more = fmt.Sprintf(", and %d more", len(list)-patternsShown)
	}
	return "[" + strings.Join(shown, ", ") + more + "]"
}

// hiddenTool finds, among the hidden tools profile's scope could see, the one name
// names; nil when there is none.
func (a *assembly) hiddenTool(profile, name string) *catalog.Tool {
	if a.hidden == nil || a.hidden.Len() == 0 {
		return nil
	}
	scope := a.g.cfg.Profiles[profile].Scope
	t, err := a.hidden.Lookup(strings.TrimSpace(name), scope.Allows)
	if err != nil {
		return nil
	}
	return t
}

// hiddenResult is the answer to a call or a tool_describe of a hidden tool.
func hiddenResult(t *catalog.Tool) *mcp.CallToolResult {
	return errorResult(search.InvalidToolInput, "the tool %s is hidden by this gateway's configuration (an override with hide: true), so it cannot be called or described; use tool_search to find another tool for the task", t.Qualified)
}

// refuseHidden answers a call or tool_describe of a hidden tool; nil when name is not
// one the profile could see.
func (ps *profileServer) refuseHidden(name string) *mcp.CallToolResult {
	if t := ps.g.current.Load().hiddenTool(ps.profile, name); t != nil {
		return hiddenResult(t)
	}
	return nil
}

// hiddenMiddleware refuses a direct call of a tool that is not listed because an
// override hides it (the SDK would answer "unknown tool").
func (ps *profileServer) hiddenMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil && !ps.tools.has(r.Params.Name) {
			if res := ps.refuseHidden(r.Params.Name); res != nil {
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// bridgedTarget reads the tool a tool_call or tool_describe names.
func bridgedTarget(args json.RawMessage) (string, bool) {
	name, _, ok := toolCallTarget(args)
	return name, ok
}
