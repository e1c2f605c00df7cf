package policy

import (
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/toolshed/toolshed/catalog"
)

// ToolConfig is a defer setting in the form of Anthropic's mcp_toolset: a server's
// default_config, or one tool's entry of configs. Nil fields inherit.
type ToolConfig struct {
	// Enabled false removes a tool from the session entirely: not listed, not
	// searchable, not callable.
	Enabled *bool `json:"enabled,omitempty" yaml:"enabled,omitempty"`
	// DeferLoading false lists a tool directly even when tool search is on.
	DeferLoading *bool `json:"defer_loading,omitempty" yaml:"defer_loading,omitempty"`
}

// ServerRules are one server's settings: tool configs override the default config, which
// overrides the global default (enabled, deferred). Pinning (alwaysLoad) is part of the
// catalog (catalog.Tool.Pinned) because it travels with the tool lists.
type ServerRules struct {
	DefaultConfig ToolConfig            `json:"default_config" yaml:"default_config"`
	Configs       map[string]ToolConfig `json:"configs,omitempty" yaml:"configs,omitempty"`
}

// Scope limits a session (a subagent, a gateway profile) to some tools. A tool is in scope
// when its server matches one of Servers or its qualified name ("server__tool") matches
// one of Tools; patterns are globs (path.Match syntax: *, ?, [a-z]). The zero Scope has
// every tool.
type Scope struct {
	Servers []string `json:"servers,omitempty" yaml:"servers,omitempty"`
	Tools   []string `json:"tools,omitempty" yaml:"tools,omitempty"`
}

// IsZero reports whether the scope admits every tool.
func (s Scope) IsZero() bool { return len(s.Servers) == 0 && len(s.Tools) == 0 }

// Check reports the first malformed pattern.
func (s Scope) Check() error {
	for _, p := range append(append([]string(nil), s.Servers...), s.Tools...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%w: scope pattern %q is not a valid glob (use *, ? and [a-z])", ErrConfig, p)
		}
	}
	return nil
}

// Allows reports whether t is in the scope.
func (s Scope) Allows(t *catalog.Tool) bool {
	if s.IsZero() {
		return true
	}
	for _, p := range s.Servers {
		if ok, _ := path.Match(p, t.Server); ok {
			return true
		}
	}
	for _, p := range s.Tools {
		if ok, _ := path.Match(p, t.Qualified); ok {
			return true
		}
	}
	return false
}

// Catalog returns the scope's own catalog: the tools of snap in the scope, as a catalog
// of their own (see catalog.Snapshot.Subset), or snap itself when the scope has every
// tool. A session's plan and search index are built over it, not over snap: search's
// statistics (how rare a word is, which words are known and so not misspellings, what
// the fallbacks try) would otherwise come from every tool, and what a session is told
// would change with tools it may not see, and tell of them, down to whether their
// servers are up.
func (s Scope) Catalog(snap *catalog.Snapshot) *catalog.Snapshot {
	if s.IsZero() {
		return snap
	}
	return snap.Subset(s.Allows)
}

// AllowsServer reports whether the scope may hold tools of the named server: a server
// pattern matches it, or a tool pattern's server part (before catalog.Separator) does.
// A tool pattern without a server part ("*search*") is not taken to reach any one
// server, so that what only the scope's owner may see is never given to a session on
// a guess.
func (s Scope) AllowsServer(name string) bool {
	if s.IsZero() {
		return true
	}
	for _, p := range s.Servers {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	for _, p := range s.Tools {
		if server, _, found := strings.Cut(p, catalog.Separator); found {
			if ok, _ := path.Match(server, name); ok {
				return true
			}
		}
	}
	return false
}

// Input is everything a Plan depends on besides the catalog.
type Input struct {
	// Config holds the mode and threshold; unset fields take their defaults (see
	// DefaultConfig).
	Config Config
	// Servers holds per-server defer settings, by server name.
	Servers map[string]ServerRules
	// Scope limits the session; the zero Scope has every tool.
	Scope Scope
	// ContextWindow is the model's context window in tokens; 0 means unknown, in which
	// case Auto turns on at UnknownWindowThreshold tokens.
	ContextWindow int
}

// Plan is what one session sees of one catalog snapshot. It is immutable and safe for
// concurrent use.
type Plan struct {
	Snapshot *catalog.Snapshot
	Config   Config
	// Active reports whether tool search is on: Deferred tools are hidden behind the
	// bridge rather than listed.
	Active bool
	// Reason says in one sentence why Active is what it is.
	Reason string
	// Visible are the tools listed directly, in catalog order.
	Visible []*catalog.Tool
	// Deferred are the tools only tool_search finds, in catalog order.
	Deferred []*catalog.Tool

	// Token figures (o200k_base, see catalog.Tool.Definition). TotalTokens is every
	// enabled tool in scope; DeferrableTokens the part tool search could hide;
	// VisibleTokens what Visible costs; Threshold the deferrable tokens at which Auto
	// turns on.
	TotalTokens, DeferrableTokens, VisibleTokens, Threshold int

	usable, deferred, pinned *catalog.Set
}

// Split sorts the tools of snap that are in scope and enabled into those that stay
// listed (pinned, or not deferred by their server's rules) and those tool search may
// hide, both in catalog order. deferByDefault is the global default of defer_loading
// for tools their rules do not settle.
func Split(snap *catalog.Snapshot, servers map[string]ServerRules, scope Scope, deferByDefault bool) (fixed, deferrable []*catalog.Tool) {
	for _, t := range snap.Tools() {
		if !scope.Allows(t) {
			continue
		}
		enabled, deferLoading := servers[t.Server].Resolve(t.Name, deferByDefault)
		switch {
		case !enabled:
		case deferLoading && !t.Pinned:
			deferrable = append(deferrable, t)
		default:
			fixed = append(fixed, t)
		}
	}
	return fixed, deferrable
}

// Decide computes the plan of snap under in.
func Decide(snap *catalog.Snapshot, in Input) *Plan {
	cfg := in.Config.withDefaults()
	p := &Plan{Snapshot: snap, Config: cfg, usable: catalog.NewSet(snap), deferred: catalog.NewSet(snap), pinned: catalog.NewSet(snap)}
	fixed, deferrable := Split(snap, in.Servers, in.Scope, true)
	for _, t := range fixed {
		p.usable.Add(t.Index)
		p.pinned.Add(t.Index)
		p.TotalTokens += snap.ToolTokens(t)
	}
	for _, t := range deferrable {
		p.usable.Add(t.Index)
		tokens := snap.ToolTokens(t)
		p.TotalTokens += tokens
		p.DeferrableTokens += tokens
	}
	p.Threshold = UnknownWindowThreshold
	if in.ContextWindow > 0 {
		p.Threshold = int(math.Ceil(float64(in.ContextWindow) * cfg.ThresholdPct / 100))
	}
	switch cfg.Enabled {
	case On:
		p.Active, p.Reason = true, "tool search is on"
	case Off:
		p.Active, p.Reason = false, "tool search is off"
	default:
		p.Active = len(deferrable) > 0 && p.DeferrableTokens >= p.Threshold
		rel := "below"
		if p.Active {
			rel = "at or above"
		}
		window := "the context window is unknown"
		if in.ContextWindow > 0 {
			window = fmt.Sprintf("%g%% of a %s-token context window", cfg.ThresholdPct, thousands(in.ContextWindow))
		}
		p.Reason = fmt.Sprintf("%d deferrable tools cost %s tokens, %s the auto threshold of %s tokens (%s)", len(deferrable), thousands(p.DeferrableTokens), rel, thousands(p.Threshold), window)
	}
	if p.Active {
		p.Visible, p.Deferred = fixed, deferrable
		for _, t := range deferrable {
			p.deferred.Add(t.Index)
		}
	} else {
		for _, t := range snap.Tools() {
			if p.usable.Has(t.Index) {
				p.Visible = append(p.Visible, t)
			}
		}
	}
	for _, t := range p.Visible {
		p.VisibleTokens += snap.ToolTokens(t)
	}
	return p
}

// Resolve says whether a tool of the server is enabled and deferred, as mcp_toolset
// decides: the tool's entry in Configs over DefaultConfig over the global default
// (enabled, and deferred when deferByDefault).
func (r ServerRules) Resolve(tool string, deferByDefault bool) (enabled, deferLoading bool) {
	enabled, deferLoading = true, deferByDefault
	for _, c := range []ToolConfig{r.DefaultConfig, r.Configs[tool]} {
		if c.Enabled != nil {
			enabled = *c.Enabled
		}
		if c.DeferLoading != nil {
			deferLoading = *c.DeferLoading
		}
	}
	return enabled, deferLoading
}

// Usable reports whether the session may describe and call t: it is in scope and
// enabled. Deferred or not does not matter.
func (p *Plan) Usable(t *catalog.Tool) bool { return p.usable.Has(t.Index) }

// Pinned reports whether the plan never defers t, whatever the mode: t is usable and
// pinned (alwaysLoad, of its server or in its own _meta) or listed directly by its rules
// (defer_loading: false). A front passes this on, so that a client that defers tools on
// its own side (Claude Code) loads these up front as well.
func (p *Plan) Pinned(t *catalog.Tool) bool { return p.pinned.Has(t.Index) }

// Searchable is the set tool_search looks in: the deferred tools.
func (p *Plan) Searchable() *catalog.Set { return p.deferred }

// Lookup finds a tool the session may use by qualified name, or by bare name when one
// usable tool has it. Tools outside the session are treated as absent, so the error for
// an out-of-scope tool is exactly the error for a name that does not exist.
func (p *Plan) Lookup(name string) (*catalog.Tool, error) {
	return p.Snapshot.Lookup(strings.TrimSpace(name), p.Usable)
}

// thousands formats n with comma separators, for messages people read.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
