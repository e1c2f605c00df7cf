package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// Besides tools, the gateway carries the rest of what its upstreams offer: prompts
// (listed like tools, under qualified names), resources and resource templates (by URI,
// which is global; the first server to list a URI owns it), completions, resource
// subscriptions, and log messages during calls.

// features are an upstream's prompts, resources and resource templates.
type features struct {
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// listFeatures reads what the server offers besides tools. A server that lists nothing
// of a kind, or fails to, simply offers none.
func (u *Upstream) listFeatures(ctx context.Context, l *link) features {
	var f features
	cs := l.cs
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		return f
	}
	if caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				u.g.logf("upstream %s: listing prompts: %v", u.cfg.Name, err)
				break
			}
			f.prompts = append(f.prompts, p)
		}
	}
	if caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				u.g.logf("upstream %s: listing resources: %v", u.cfg.Name, err)
				break
			}
			f.resources = append(f.resources, r)
		}
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				u.g.logf("upstream %s: listing resource templates: %v", u.cfg.Name, err)
				break
			}
			f.templates = append(f.templates, t)
		}
	}
	if caps.Logging != nil && !l.modern() {
		// Ask for every message; each client gets what its own level lets through. A
		// modern server has no logging/setLevel: the level rides in each request's
		// _meta (see link.callMeta).
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: upstreamLogLevel})
	}
	return f
}

// session returns the upstream's live session, or ErrUnavailable.
func (u *Upstream) liveSession() (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session == nil {
		return nil, fmt.Errorf("%w: %s is %s", ErrUnavailable, u.cfg.Name, u.status.State)
	}
	return u.session, nil
}

// withCallTimeout bounds a relayed request like a tool call.
func (u *Upstream) withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, u.callTimeout())
}

// callTimeout is the server's call_timeout, else config.DefaultCallTimeout.
func (u *Upstream) callTimeout() time.Duration {
	if u.cfg.CallTimeout > 0 {
		return u.cfg.CallTimeout
	}
	return config.DefaultCallTimeout
}

// featureSet is what one profile lists besides tools.
type featureSet struct {
	prompts   map[string]promptExposure // listed name -> prompt
	resources map[string]*Upstream      // URI -> owner
	templates map[string]*Upstream      // URI template -> owner
	defs      map[string]featureDef     // "prompt:NAME", "resource:URI", "template:URI" -> definition
}

type promptExposure struct {
	up   *Upstream
	real string
	def  *mcp.Prompt
}

// features computes what a profile lists besides tools over a.
func (a *assembly) featureSet(profile string, noPrefix bool) featureSet {
	scope := a.g.cfg.Profiles[profile].Scope
	fs := featureSet{prompts: map[string]promptExposure{}, resources: map[string]*Upstream{}, templates: map[string]*Upstream{}, defs: map[string]featureDef{}}
	// The prompts the profile sees, with how many servers share each name among them.
	type visible struct {
		up *Upstream
		p  *mcp.Prompt
	}
	var prompts []visible
	count := map[string]int{}
	for _, u := range a.g.upstreams {
		for _, p := range a.features[u.cfg.Name].prompts {
			if serverInScope(scope, u.cfg.Name) || matchAny(scope.Tools, catalog.Qualify(u.cfg.Name, p.Name)) {
				prompts = append(prompts, visible{u, p})
				count[p.Name]++
			}
		}
	}
	for _, v := range prompts {
		name := catalog.Qualify(v.up.cfg.Name, v.p.Name)
		if noPrefix && count[v.p.Name] == 1 {
			name = v.p.Name
		}
		def := *v.p
		def.Name = name
		fs.prompts[name] = promptExposure{up: v.up, real: v.p.Name, def: &def}
		fs.defs["prompt:"+name] = featureDef{&def, v.up.cfg.Name}
	}
	for _, u := range a.g.upstreams {
		f, ok := a.features[u.cfg.Name]
		if !ok || !serverInScope(scope, u.cfg.Name) {
			continue
		}
		for _, r := range f.resources {
			if _, taken := fs.resources[r.URI]; !taken {
				fs.resources[r.URI] = u
				fs.defs["resource:"+r.URI] = featureDef{r, u.cfg.Name}
			}
		}
		for _, t := range f.templates {
			if _, taken := fs.templates[t.URITemplate]; !taken {
				fs.templates[t.URITemplate] = u
				fs.defs["template:"+t.URITemplate] = featureDef{t, u.cfg.Name}
			}
		}
	}
	return fs
}

// featureDef is a listed prompt, resource or template and the server that owns it: a
// change of either re-registers it, so calls go to the new owner.
type featureDef struct {
	def   any
	owner string
}

// serverInScope reports whether a scope grants a whole server.
func serverInScope(s policy.Scope, server string) bool {
	if s.IsZero() {
		return true
	}
	for _, p := range s.Servers {
		if ok, _ := path.Match(p, server); ok {
			return true
		}
	}
	return false
}

// syncFeatures makes the profile's server list a's prompts, resources and templates.
func (ps *profileServer) syncFeatures(a *assembly) {
	fs := a.featureSet(ps.profile, ps.g.opts.NoPrefix)
	ps.features = fs
	keys := map[string]string{}
	for k, fd := range fs.defs {
		b, _ := json.Marshal(fd.def)
		sum := sha256.Sum256(append(b, "\x00"+fd.owner...))
		keys[k] = string(sum[:])
	}
	var gonePrompts, goneResources, goneTemplates []string
	for k := range ps.featureKeys {
		if _, ok := keys[k]; ok {
			continue
		}
		kind, name, _ := strings.Cut(k, ":")
		switch kind {
		case "prompt":
			gonePrompts = append(gonePrompts, name)
		case "resource":
			goneResources = append(goneResources, name)
		case "template":
			goneTemplates = append(goneTemplates, name)
		}
		delete(ps.featureKeys, k)
	}
	if len(gonePrompts) > 0 {
		ps.server.RemovePrompts(gonePrompts...)
	}
	if len(goneResources) > 0 {
		ps.server.RemoveResources(goneResources...)
	}
	if len(goneTemplates) > 0 {
		ps.server.RemoveResourceTemplates(goneTemplates...)
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if ps.featureKeys[k] == keys[k] {
			continue
		}
		kind, name, _ := strings.Cut(k, ":")
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			switch kind {
			case "prompt":
				ps.server.AddPrompt(fs.prompts[name].def, ps.getPrompt(name))
			case "resource":
				r := *fs.defs[k].def.(*mcp.Resource)
				ps.server.AddResource(&r, ps.readResource(fs.resources[name]))
			case "template":
				t := *fs.defs[k].def.(*mcp.ResourceTemplate)
				ps.server.AddResourceTemplate(&t, ps.readResource(fs.templates[name]))
			}
			return nil
		}()
		if err != nil {
			ps.g.logf("cannot list %s %s: %v", kind, name, err)
			continue
		}
		ps.featureKeys[k] = keys[k]
	}
}

// passOnFeatures is passOn for prompts and resources: it re-adds, as listed, one prompt
// and one resource or template of each server that announced a change of them.
func (ps *profileServer) passOnFeatures(announced map[string]listKinds) {
	fs := ps.features
	left := maps.Clone(announced) // the caller's map is every profile's
	for _, k := range slices.Sorted(maps.Keys(ps.featureKeys)) {
		kind, name, _ := strings.Cut(k, ":")
		fd, ok := fs.defs[k]
		if !ok {
			continue
		}
		switch {
		case kind == "prompt" && left[fd.owner]&listPrompts != 0:
			ps.server.AddPrompt(fs.prompts[name].def, ps.getPrompt(name))
			left[fd.owner] &^= listPrompts
		case kind == "resource" && left[fd.owner]&listResources != 0:
			r := *fd.def.(*mcp.Resource)
			ps.server.AddResource(&r, ps.readResource(fs.resources[name]))
			left[fd.owner] &^= listResources
		case kind == "template" && left[fd.owner]&listResources != 0:
			t := *fd.def.(*mcp.ResourceTemplate)
			ps.server.AddResourceTemplate(&t, ps.readResource(fs.templates[name]))
			left[fd.owner] &^= listResources
		}
	}
}

// getPrompt forwards prompts/get to the prompt's server, under its real name. A server
// of 2026-07-28 may answer it with input_required (MRTR): the answer goes back as it
// came, and the retry (inputResponses and the server's requestState) goes to the server;
// the server, not toolshed, holds the state of a prompt or resource request, and checks
// its own (SEP-2322). A client of 2025 is asked by the go-sdk's server, which retries.
func (ps *profileServer) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ps.g.serversMu.Lock()
		p, ok := ps.features.prompts[name]
		ps.g.serversMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("prompt %q is not available any more", name)
		}
		cs, err := p.up.liveSession()
		if err != nil {
			return nil, err
		}
		defer ps.g.forwarding(p.up.cfg.Name, req.Session)()
		ctx, cancel := p.up.withCallTimeout(p.up.asUser(ctx, req.Session))
		defer cancel()
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.real, Arguments: req.Params.Arguments, Meta: withoutEnvelope(req.Params.Meta),
			InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState})
	}
}

// readResource forwards resources/read to the server that listed the resource or
// template.
func (ps *profileServer) readResource(u *Upstream) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs, err := u.liveSession()
		if err != nil {
			return nil, err
		}
		defer ps.g.forwarding(u.cfg.Name, req.Session)()
		ctx, cancel := u.withCallTimeout(u.asUser(ctx, req.Session))
		defer cancel()
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI, Meta: withoutEnvelope(req.Params.Meta),
			InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState})
	}
}

// owner returns the upstream that serves a resource URI: the one that listed it, else
// one whose template matches it.
func (ps *profileServer) owner(uri string) *Upstream {
	ps.g.serversMu.Lock()
	defer ps.g.serversMu.Unlock()
	if u, ok := ps.features.resources[uri]; ok {
		return u
	}
	for tmpl, u := range ps.features.templates {
		if templateMatches(tmpl, uri) {
			return u
		}
	}
	return nil
}

// templateMatches reports whether uri could come from an RFC 6570 template: the literal
// parts around the expressions must match.
func templateMatches(tmpl, uri string) bool {
	var parts []string
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return false
		}
		rest = rest[i+j+1:]
	}
	if !strings.HasPrefix(uri, parts[0]) {
		return false
	}
	uri = uri[len(parts[0]):]
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		i := strings.Index(uri, p)
		if i < 0 {
			return false
		}
		uri = uri[i+len(p):]
	}
	return parts[len(parts)-1] == "" || uri == ""
}

// subscribe forwards resources/subscribe to the resource's server, once per URI however
// many sessions subscribe (see subscriptions).
func (ps *profileServer) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	u := ps.owner(uri)
	if u == nil {
		return fmt.Errorf("no server offers resource %q", uri)
	}
	cs, err := u.liveSession()
	if err != nil {
		return err
	}
	if first := ps.g.subs.add(uri, req.Session, ps); first {
		defer ps.g.forwarding(u.cfg.Name, req.Session)()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			ps.g.subs.remove(uri, req.Session)
			return err
		}
	}
	return nil
}

func (ps *profileServer) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	if last := ps.g.subs.remove(req.Params.URI, req.Session); last {
		ps.unsubscribeUpstream(ctx, req.Params.URI)
	}
	return nil
}

// unsubscribeUpstream ends toolshed's own subscription to uri. It runs on a context of its
// own: the client's may already be cancelled (the SDK unsubscribes when a listen ends).
func (ps *profileServer) unsubscribeUpstream(ctx context.Context, uri string) {
	u := ps.owner(uri)
	if u == nil {
		return
	}
	cs, err := u.liveSession()
	if err != nil {
		return // the server is gone, and its subscription with it
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		ps.g.logf("upstream %s: unsubscribing from %s: %v", u.cfg.Name, uri, err)
	}
}

// subscriptions tracks which client sessions subscribe to which resources, so that
// toolshed holds one upstream subscription per URI while any session wants it,
// subscribes again when a server restarts, and drops the subscriptions of sessions that
// went away without unsubscribing.
type subscriptions struct {
	mu sync.Mutex
	by map[string]map[*mcp.ServerSession]*profileServer // URI -> subscribed sessions
}

// any reports whether any session subscribes to anything.
func (s *subscriptions) any() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.by) > 0
}

// add records a subscription and reports whether it is the URI's first.
func (s *subscriptions) add(uri string, ss *mcp.ServerSession, ps *profileServer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]map[*mcp.ServerSession]*profileServer{}
	}
	set := s.by[uri]
	if set == nil {
		set = map[*mcp.ServerSession]*profileServer{}
		s.by[uri] = set
	}
	set[ss] = ps
	return len(set) == 1
}

// remove drops a subscription and reports whether it was the URI's last.
func (s *subscriptions) remove(uri string, ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	set, ok := s.by[uri]
	if !ok {
		return false
	}
	if _, had := set[ss]; !had {
		return false
	}
	delete(set, ss)
	if len(set) == 0 {
		delete(s.by, uri)
		return true
	}
	return false
}

// resubscribe subscribes again, on a server that just (re)started, to the resources it
// owns that sessions are subscribed to.
func (g *Gateway) resubscribe(ctx context.Context, u *Upstream, cs *mcp.ClientSession) {
	g.subs.mu.Lock()
	var uris []string
	for uri, set := range g.subs.by {
		for _, ps := range set {
			if ps.owner(uri) == u {
				uris = append(uris, uri)
			}
			break
		}
	}
	g.subs.mu.Unlock()
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			g.logf("upstream %s: subscribing again to %s: %v", u.cfg.Name, uri, err)
		}
	}
}

// sweepSubscriptions forgets the subscriptions of sessions that are gone and ends the
// upstream subscriptions no session wants any more.
func (g *Gateway) sweepSubscriptions(ctx context.Context) {
	live := map[*mcp.ServerSession]bool{}
	g.serversMu.Lock()
	for _, ps := range g.servers {
		for ss := range ps.server.Sessions() {
			live[ss] = true
		}
	}
	g.serversMu.Unlock()
	type orphan struct {
		uri string
		ps  *profileServer
	}
	var orphans []orphan
	g.subs.mu.Lock()
	for uri, set := range g.subs.by {
		var any *profileServer
		for ss, ps := range set {
			any = ps
			if !live[ss] {
				delete(set, ss)
			}
		}
		if len(set) == 0 {
			delete(g.subs.by, uri)
			orphans = append(orphans, orphan{uri, any})
		}
	}
	g.subs.mu.Unlock()
	for _, o := range orphans {
		o.ps.unsubscribeUpstream(ctx, o.uri)
	}
}

// complete forwards completion/complete to the server of the prompt or resource
// template it refers to.
func (ps *profileServer) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	params := *req.Params
	ref := *params.Ref
	var u *Upstream
	switch ref.Type {
	case "ref/prompt":
		ps.g.serversMu.Lock()
		p, ok := ps.features.prompts[ref.Name]
		ps.g.serversMu.Unlock()
		if ok {
			u, ref.Name = p.up, p.real
		}
	case "ref/resource":
		u = ps.owner(ref.URI)
		if u == nil {
			ps.g.serversMu.Lock()
			u = ps.features.templates[ref.URI]
			ps.g.serversMu.Unlock()
		}
	}
	if u == nil {
		return nil, fmt.Errorf("nothing offers completions for %s %q", ref.Type, ref.Name+ref.URI)
	}
	cs, err := u.liveSession()
	if err != nil {
		return nil, err
	}
	params.Ref = &ref
	defer ps.g.forwarding(u.cfg.Name, req.Session)()
	ctx, cancel := u.withCallTimeout(u.asUser(ctx, req.Session))
	defer cancel()
	return cs.Complete(ctx, &params)
}

// resourceUpdated relays an upstream's notifications/resources/updated to every session
// subscribed to the resource.
func (g *Gateway) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	g.serversMu.Lock()
	servers := make([]*mcp.Server, 0, len(g.servers))
	for _, ps := range g.servers {
		servers = append(servers, ps.server)
	}
	g.serversMu.Unlock()
	for _, s := range servers {
		_ = s.ResourceUpdated(ctx, p)
	}
}

// logMessage relays an upstream's log message to a client only when it cannot be
// another client's: a log message carries no link to the call it is about, and may come
// after that call ended, while another client's call runs, or after its client left. So
// it goes to a client only when that client's session is the only live one that may use
// the server (see liveSessions) and no other principal used it lately (see principals),
// as part of its call on that server; otherwise, and when no call of that session is
// running, to toolshed's log.
func (r *callRegistry) logMessage(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
	toLog := func() {
		data, _ := json.Marshal(p.Data)
		r.g.logf("upstream %s: %s: %s", server, p.Level, data)
	}
	live := r.g.liveSessions(server)
	if len(live) != 1 || r.principals(server) > 1 {
		toLog()
		return
	}
	r.mu.Lock()
	for _, c := range r.inflight[server] {
		if c.session == live[0] {
			c.note(func() {
				if c.session.Log(c.context(), p) != nil {
					toLog()
				}
			})
			r.mu.Unlock()
			return
		}
	}
	r.mu.Unlock()
	toLog()
}
