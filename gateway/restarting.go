package gateway

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/override"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// A server that crashed or closed its connection leaves the catalog until it is back, so
// that search and tools/list offer nothing that cannot run. Its tools stay known to the
// call router meanwhile: a call of one gets unavailable with advice to retry, as a call
// of a tool whose server is down should, rather than "no tool named ...", which tells the
// model the tool does not exist and sends it looking for another.

// unsearched returns the servers profile may use whose tools are not in the catalog now,
// in config order: in their first start, or down and restarting. A tool_search that
// finds too few tools names them (see bridge.Bridge.Unsearched); a profile never learns
// of servers it may not use.
func (g *Gateway) unsearched(profile string) []bridge.Unsearched {
	scope := g.cfg.Profiles[profile].Scope
	var out []bridge.Unsearched
	for _, u := range g.upstreams {
		if !scope.AllowsServer(u.cfg.Name) {
			continue
		}
		switch st := u.Status(); {
		case st.State == Failed:
			wait := time.Until(st.Since.Add(st.Retry))
			out = append(out, bridge.Unsearched{Server: st.Name, State: bridge.Restarting, RetryIn: int(math.Ceil(max(wait, 0).Seconds()))})
		case st.State == Connecting && st.Restarts == 0:
			out = append(out, bridge.Unsearched{Server: st.Name, State: bridge.Starting})
		case st.State == Connecting:
			out = append(out, bridge.Unsearched{Server: st.Name, State: bridge.Restarting})
		case st.State == NeedsSignIn:
			out = append(out, bridge.Unsearched{Server: st.Name, State: bridge.NeedsSignIn})
		}
	}
	return out
}

// restartingTools builds the catalog of the last known tools of the upstreams that are
// restarting (see Upstream.restartingSource).
func (g *Gateway) restartingTools() *catalog.Snapshot {
	var sources []catalog.Source
	for _, u := range g.upstreams {
		if src, ok := u.restartingSource(); ok {
			sources = append(sources, src)
		}
	}
	// Tools an override hides stay hidden while their server restarts.
	snap, _ := g.decoded.Build(override.Apply(g.cfg.Overrides, sources).Sources) // their problems were reported while they were up
	return snap
}

// restartingTool finds, among the tools of the restarting upstreams that profile may
// use, the one a call names: by qualified name, by bare name when only one has it, or
// by the shortened name it was listed under (see shortenNames). It returns nil when
// there is none.
func (a *assembly) restartingTool(profile, name string) *catalog.Tool {
	if a.restarting == nil || a.restarting.Len() == 0 {
		return nil
	}
	fixed, deferrable := policy.Split(a.restarting, a.g.serverRules(), a.g.cfg.Profiles[profile].Scope, true)
	usable := map[*catalog.Tool]bool{}
	for _, t := range append(fixed, deferrable...) {
		usable[t] = true
	}
	name = strings.TrimSpace(name)
	if t, err := a.restarting.Lookup(name, func(t *catalog.Tool) bool { return usable[t] }); err == nil {
		return t
	}
	if limit := a.g.opts.MaxNameLen; limit > 0 && len(name) <= limit {
		for t := range usable {
			for _, listed := range []string{t.Qualified, t.Name} {
				if len(listed) > limit && (name == shortName(listed, t.Qualified, limit, 8) || name == shortName(listed, t.Qualified, limit, 16)) {
					return t
				}
			}
		}
	}
	return nil
}

// callRestarting runs a call of a tool of a restarting upstream as any call is run
// (hooks, argument validation, the activity log): the upstream has no connection, so the
// call ends unavailable, unless the server came back meanwhile, when it simply runs. A
// call of a server that has never been up is unavailable too (see notStarted). It
// returns nil when the name is no such tool.
func (ps *profileServer) callRestarting(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage, via string) (*mcp.CallToolResult, error) {
	t := ps.g.current.Load().restartingTool(ps.profile, name)
	if t == nil {
		return ps.notStarted(name, "called"), nil
	}
	return ps.g.calls.run(ctx, callSpec{req: req, profile: ps.profile, tool: t, args: args, via: via})
}

// notStarted answers a call or tool_describe (what is done to the tool) of a name
// that names, by its qualified name, a tool of a server profile may use that has never
// been up: still in its first start, or failed in it and restarting. Its tools are
// unknown until it is up, so the tool may well be one of them: it is unavailable, as a
// tool of a restarting server is, rather than "no tool named", which tells the model
// the tool does not exist and sends it looking for another. It returns nil for any
// other name.
func (ps *profileServer) notStarted(name, done string) *mcp.CallToolResult {
	name = strings.TrimSpace(name)
	server, tool, ok := strings.Cut(name, catalog.Separator)
	u := ps.g.byName[server]
	if !ok || tool == "" || u == nil || !ps.g.cfg.Profiles[ps.profile].Scope.Allows(&catalog.Tool{Server: server, Name: tool, Qualified: name}) {
		return nil
	}
	u.mu.Lock()
	st, everUp := u.status, u.everUp
	u.mu.Unlock()
	switch {
	case st.State == NeedsSignIn:
		return errorResult(search.Unavailable, "the server %s needs sign-in: run `toolshed auth login %s`; %s can be %s once it is signed in", server, server, name, done)
	case everUp:
		return nil // its tools are known: restartingTool found none of that name
	case st.State == Connecting && st.Restarts == 0:
		return errorResult(search.Unavailable, "the server %s is still starting, and %s can be %s once it is up; retry with backoff in a few seconds", server, name, done)
	case st.State == Connecting || st.State == Failed:
		why := ""
		if st.Err != nil {
			why = " (" + st.Err.Error() + ")"
		}
		return errorResult(search.Unavailable, "the server %s has not started yet%s, and %s can be %s once it is up; toolshed restarts it automatically, retry with backoff in a few seconds", server, why, name, done)
	}
	return nil
}

// describeRestarting answers tool_describe of a tool whose server is restarting or has
// never been up (see notStarted): unavailable, as a call of it is, rather than "no tool
// named". It returns nil when the name is a tool of the catalog or of no such server
// the profile may use.
func (ps *profileServer) describeRestarting(plan *policy.Plan, args json.RawMessage) *mcp.CallToolResult {
	name, _, ok := toolCallTarget(args) // tool_describe's "name" is tool_call's
	if !ok || !isUnknown(plan, name) {
		return nil
	}
	t := ps.g.current.Load().restartingTool(ps.profile, name)
	if t == nil {
		return ps.notStarted(name, "described")
	}
	return errorResult(search.Unavailable, "the server %s is restarting, and its tool %s is described once it is back; toolshed restarts it automatically, retry with backoff in a few seconds", t.Server, t.Qualified)
}

// restartingMiddleware routes a direct call of a tool that is no longer listed because
// its server is restarting (the SDK would answer "unknown tool") to callRestarting.
func (ps *profileServer) restartingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil && !ps.tools.has(r.Params.Name) {
			if res, err := ps.callRestarting(ctx, r, r.Params.Name, r.Params.Arguments, "direct"); res != nil || err != nil {
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// toolCallTarget reads the name and arguments of a tool_call, when they can be read.
func toolCallTarget(args json.RawMessage) (string, json.RawMessage, bool) {
	obj, err := bridge.DecodeArguments(args)
	if err != nil {
		return "", nil, false
	}
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(obj, &in) != nil || in.Name == "" {
		return "", nil, false
	}
	return in.Name, in.Arguments, true
}
