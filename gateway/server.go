package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// profileServer is the MCP server every session of one profile talks to. Its tool list
// follows the catalog: at every reassembly it lists what the profile's plan says.
type profileServer struct {
	g       *Gateway
	profile string
	server  *mcp.Server
	// impl is who server says it is (serverInfo), which the fast path puts in a modern
	// client's results as the SDK does (see fastCall.modernResult).
	impl   *mcp.Implementation
	listed map[string]string // listed name -> content key of its definition
	// refused has the definitions the SDK would not list, reported once each.
	refused map[string]string
	// tools has the bytes each tool is listed with (see listedTools).
	tools listedTools
	// features and featureKeys are what the server lists besides tools; guarded by
	// the gateway's serversMu.
	features    featureSet
	featureKeys map[string]string
}

func newProfileServer(g *Gateway, profile string) *profileServer {
	ps := &profileServer{g: g, profile: profile, listed: map[string]string{}, refused: map[string]string{}, featureKeys: map[string]string{}}
	ps.impl = &mcp.Implementation{Name: "toolshed", Title: "toolshed MCP gateway", Version: Version}
	ps.server = mcp.NewServer(ps.impl, &mcp.ServerOptions{
		Logger: g.slogger(),
		// The protocol versions are narrowed by the transports (see directFront), so
		// that a client probing with server/discover is offered what they serve.
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { g.rootsListChanged() },
		HasTools:                true,
		HasPrompts:              true,
		HasResources:            true,
		SubscribeHandler:        ps.subscribe,
		UnsubscribeHandler:      ps.unsubscribe,
		CompletionHandler:       ps.complete,
		SetCacheable:            g.cacheable(profile),
		Instructions:            toolshedInstructions, // and the servers' (see instructionsMiddleware)
	})
	// Held until the upstreams are up (sessionMiddleware) before the raw results are
	// swapped in (tools.middleware).
	ps.server.AddReceivingMiddleware(relatedStream, g.sessionMiddleware(profile), checkLogLevel, g.tasksCapability, ps.instructionsMiddleware, ps.tools.middleware, ps.restartingMiddleware, ps.hiddenMiddleware)
	return ps
}

// exposure is one tool to list: its definition and how to handle calls to it.
type exposure struct {
	// def is what the SDK routes calls with: the listed name and the input schema.
	def *mcp.Tool
	// raw is the definition as listed (see listedDefinition), with the _meta members
	// toolshed adds (see listedMeta).
	raw     []byte
	key     string // changes when the definition does
	handler mcp.ToolHandler
}

// newExposure lists the definition src (JSON, as its server sent it) under name, with
// meta set in its _meta, handled by h.
func newExposure(src json.RawMessage, name string, inputSchema json.RawMessage, h mcp.ToolHandler, meta ...member) exposure {
	raw := listedDefinition(src, name, meta...)
	def := &mcp.Tool{Name: name, InputSchema: json.RawMessage(objectSchema(inputSchema))}
	return exposure{def: def, raw: raw, key: contentKey(name, raw), handler: h}
}

// sync makes the server list what the profile's plan over a says: tools that changed are
// replaced, tools that went are removed. The SDK tells the sessions, once, that the list
// changed.
func (ps *profileServer) sync(a *assembly) (toolsChanged bool) {
	ps.syncFeatures(a)
	want := ps.exposures(a)
	var gone []string
	for name := range ps.listed {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		ps.tools.remove(ps.server, gone...)
		for _, n := range gone {
			delete(ps.listed, n)
		}
		toolsChanged = true
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := want[n]
		if ps.listed[n] == e.key {
			continue
		}
		if err := ps.tools.add(ps.server, e.def, e.raw, e.handler); err != nil {
			if ps.refused[n] != e.key { // once per definition, not at every sync
				ps.g.logf("cannot list tool %s: %v", n, err)
				ps.refused[n] = e.key
			}
			continue
		}
		delete(ps.refused, n)
		ps.listed[n] = e.key
		toolsChanged = true
	}
	return toolsChanged
}

// passOn tells the profile's sessions of the changes servers announced (see
// Gateway.reassemble) to lists in which the profile lists something of theirs:
// re-adding one such item as listed makes the SDK send (debounced, once) its
// list_changed, to old sessions and to modern ones' listens. A profile that lists
// nothing of theirs (tool search on, or the server filtered out) sees no change and is
// told nothing. toldTools says that this round's sync changed the profile's tools, so
// their list_changed is on its way already: re-adding one more would send a second,
// for the same change, when the SDK's debounce has passed in between (a busy machine).
func (ps *profileServer) passOn(a *assembly, announced map[string]listKinds, toldTools bool) {
	ps.passOnFeatures(announced)
	if toldTools {
		return
	}
	plan := a.plan(ps.profile)
	var names map[*catalog.Tool]string
	for _, t := range plan.Visible {
		if announced[t.Server]&listTools == 0 {
			continue
		}
		if names == nil {
			names = ps.names(plan)
		}
		name := names[t]
		e := newExposure(t.Raw, name, t.InputSchema, ps.direct(t.Qualified), listedMeta(plan, t)...)
		if ps.listed[name] != e.key {
			continue // not listed as it is now (refused): sync has said what it could
		}
		if err := ps.tools.add(ps.server, e.def, e.raw, e.handler); err != nil {
			ps.g.logf("cannot list tool %s: %v", name, err)
			continue
		}
		return
	}
}

// addTool adds a tool, turning the SDK's panic on a schema it refuses into an error.
func addTool(s *mcp.Server, def *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.AddTool(def, h)
	return nil
}

// exposures computes what the profile lists over a: every tool when tool search is off,
// else the non-deferred tools and the bridge.
func (ps *profileServer) exposures(a *assembly) map[string]exposure {
	plan := a.plan(ps.profile)
	out := map[string]exposure{}
	names := ps.names(plan)
	for _, t := range plan.Visible {
		name := names[t]
		out[name] = newExposure(t.Raw, name, t.InputSchema, ps.direct(t.Qualified), listedMeta(plan, t)...)
	}
	if plan.Active {
		for _, d := range bridge.DefinitionsStarting(plan, a.startingFor(ps.profile)) {
			def := &mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: d.Name != bridge.CallTool, OpenWorldHint: ptr(d.Name == bridge.CallTool)}}
			src, err := marshal(def)
			if err != nil {
				ps.g.logf("cannot list tool %s: %v", d.Name, err)
				continue
			}
			out[d.Name] = newExposure(src, d.Name, d.InputSchema, ps.bridged(d.Name), bridgeMeta()...)
		}
	}
	return out
}

// names gives every visible tool of plan the name the profile lists it under.
func (ps *profileServer) names(plan *policy.Plan) map[*catalog.Tool]string {
	names := listedNames(plan, ps.g.opts.NoPrefix)
	shortenNames(names, []string{bridge.SearchTool, bridge.DescribeTool, bridge.CallTool}, ps.g.opts.MaxNameLen)
	return names
}

// alwaysLoad is the _meta member by which a server asks Claude Code to put a tool in the
// model's first request instead of deferring it behind Claude Code's own ToolSearch
// (Claude Code 2.1.3xx defers every MCP tool that lacks it, when its tool search is on).
const alwaysLoad = "anthropic/alwaysLoad"

// listedMeta is what toolshed adds to the _meta of a listed tool: alwaysLoad when the
// plan never defers the tool (pinned by its server's or its own alwaysLoad, or by
// defer_loading: false), in every mode, so that a client that defers tools itself does
// not undo the pin. Other tools get nothing: with tool search off or below the auto
// threshold, whether to defer them is the client's own business.
func listedMeta(plan *policy.Plan, t *catalog.Tool) []member {
	if plan.Pinned(t) {
		return bridgeMeta()
	}
	return nil
}

// bridgeMeta is the _meta of the bridge tools: they exist to save the model round trips,
// so a client must not defer them behind a search step of its own.
func bridgeMeta() []member { return []member{{Key: alwaysLoad, Value: json.RawMessage("true")}} }

func ptr[T any](v T) *T { return &v }

// contentKey identifies what a listed tool looks like: its name and its definition as
// listed, the _meta members toolshed adds included.
func contentKey(name string, raw []byte) string {
	sum := sha256.Sum256(append([]byte(name+"\x00"), raw...))
	return string(sum[:])
}

// listedNames gives every visible tool the name it is listed under: the qualified name,
// or with noPrefix the bare name when no other listed tool (nor a bridge tool) has it.
func listedNames(plan *policy.Plan, noPrefix bool) map[*catalog.Tool]string {
	out := make(map[*catalog.Tool]string, len(plan.Visible))
	count := map[string]int{}
	if noPrefix {
		for _, t := range plan.Visible {
			count[t.Name]++
		}
		if plan.Active {
			for _, n := range []string{bridge.SearchTool, bridge.DescribeTool, bridge.CallTool} {
				count[n]++
			}
		}
	}
	for _, t := range plan.Visible {
		if noPrefix && count[t.Name] == 1 {
			out[t] = t.Name
		} else {
			out[t] = t.Qualified
		}
	}
	return out
}

// listedTokens is what listing profile's tools costs a model (o200k_base), bridge
// included.
func (a *assembly) listedTokens(profile string) int {
	plan := a.plan(profile)
	n := plan.VisibleTokens
	if plan.Active {
		n += bridge.Tokens(bridge.DefinitionsStarting(plan, a.startingFor(profile)))
	}
	return n
}

// direct handles a call of a listed tool.
func (ps *profileServer) direct(qualified string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a := ps.g.current.Load()
		t, err := a.plan(ps.profile).Lookup(qualified)
		if err != nil {
			if res, err := ps.callRestarting(ctx, req, qualified, req.Params.Arguments, "direct"); res != nil || err != nil {
				return res, err
			}
			return errorResult(search.Unavailable, "%s is not available any more (its server stopped or dropped it); list the tools again", qualified), nil
		}
		return ps.g.calls.run(ctx, callSpec{req: req, profile: ps.profile, tool: t, args: req.Params.Arguments, via: "direct"})
	}
}

// isUnknown reports whether plan has no tool of that name (not even an ambiguous one).
func isUnknown(plan *policy.Plan, name string) bool {
	_, err := plan.Lookup(name)
	return errors.Is(err, catalog.ErrUnknownTool)
}

// bridged handles a call of a bridge tool.
func (ps *profileServer) bridged(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a := ps.g.current.Load()
		ix := a.index(ps.profile)
		b := &bridge.Bridge{Plan: a.plan(ps.profile), Index: ix, Rank: ps.g.vectors.rank(ix)}
		if name == bridge.DescribeTool {
			start := time.Now()
			res := ps.describe(b, req.Params.Arguments)
			ps.g.rec.describe(res, time.Since(start))
			return res, nil
		}
		if name == bridge.CallTool {
			if target, ok := bridgedTarget(req.Params.Arguments); ok && isUnknown(b.Plan, target) {
				if res := ps.refuseHidden(target); res != nil {
					return res, nil
				}
			}
		}
		if name == bridge.SearchTool {
			b.Unsearched = ps.g.unsearched(ps.profile)
			start := time.Now()
			res := b.Search(req.Params.Arguments)
			ps.g.rec.search(req.Session, ps.profile, b.Plan, req.Params.Arguments, res, time.Since(start))
			return fromBridge(res), nil
		}
		if name != bridge.CallTool {
			return fromBridge(b.Handle(name, req.Params.Arguments)), nil
		}
		start := time.Now()
		t, args, res := b.ResolveCall(req.Params.Arguments)
		if t == nil {
			// Not a tool the catalog has now: perhaps one of a server that is
			// restarting.
			name, args, ok := toolCallTarget(req.Params.Arguments)
			if ok && isUnknown(b.Plan, name) {
				if res, err := ps.callRestarting(ctx, req, name, args, "tool_call"); res != nil || err != nil {
					return res, err
				}
			}
			if ok {
				ps.g.rec.refused(req.Session, ps.profile, b.Plan, name, time.Since(start))
			}
			return fromBridge(res), nil
		}
		return ps.g.calls.run(ctx, callSpec{req: req, profile: ps.profile, tool: t, args: args, via: "tool_call", checked: true})
	}
}

// describe answers tool_describe: a hidden tool and one of a restarting server are
// refused as a call of them is; anything else is the bridge's to answer.
func (ps *profileServer) describe(b *bridge.Bridge, args json.RawMessage) *mcp.CallToolResult {
	if target, ok := bridgedTarget(args); ok && isUnknown(b.Plan, target) {
		if res := ps.refuseHidden(target); res != nil {
			return res
		}
	}
	if res := ps.describeRestarting(b.Plan, args); res != nil {
		return res
	}
	return fromBridge(b.Handle(bridge.DescribeTool, args))
}
