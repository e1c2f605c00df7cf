package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/tokens"
)

// testCatalog has pinned tools of both kinds (a server marked alwaysLoad and a tool whose
// _meta carries anthropic/alwaysLoad), a _meta flag that is not the JSON value true, and a
// bare name (create_issue) that two servers share.
const testCatalog = `{"servers": [
  {"name": "github", "tools": [
    {"name": "create_issue", "description": "Create a new issue in a GitHub repository.",
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}}, "required": ["owner", "repo", "title"]}},
    {"name": "list_issues", "description": "List the issues of a repository, newest first.",
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}}},
    {"name": "search_code", "description": "Search code across every repository.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
     "_meta": {"anthropic/alwaysLoad": true}},
    {"name": "get_me", "description": "Get the authenticated user.",
     "_meta": {"anthropic/alwaysLoad": "true"}}
  ]},
  {"name": "slack", "tools": [
    {"name": "post_message", "description": "Post a message to a Slack channel.",
     "inputSchema": {"type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}, "required": ["channel", "text"]}},
    {"name": "list_channels", "description": "List the channels of the workspace."}
  ]},
  {"name": "core", "alwaysLoad": true, "tools": [
    {"name": "echo", "description": "Echo the input back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
  ]},
  {"name": "jira", "tools": [
    {"name": "create_issue", "description": "Create a Jira issue in a project.",
     "inputSchema": {"type": "object", "properties": {"project": {"type": "string"}, "summary": {"type": "string"}}, "required": ["project", "summary"]}}
  ]},
  {"name": "secret", "tools": [
    {"name": "obliterate", "description": "Delete every resource in the account."}
  ]}
]}`

// Qualified names of testCatalog, in catalog order.
var (
	allTools = []string{
		"github__create_issue", "github__list_issues", "github__search_code", "github__get_me",
		"slack__post_message", "slack__list_channels", "core__echo", "jira__create_issue", "secret__obliterate",
	}
	pinnedTools = []string{"github__search_code", "core__echo"}
)

var builtinSnap = sync.OnceValues(builtin.Snapshot)

func builtinSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, problems := builtinSnap()
	if len(problems) > 0 {
		t.Fatalf("built-in catalog has problems: %v", problems)
	}
	if snap.Len() == 0 {
		t.Fatal("built-in catalog is empty")
	}
	return snap
}

func names(tools []*catalog.Tool) []string {
	out := []string{}
	for _, t := range tools {
		out = append(out, t.Qualified)
	}
	return out
}

// without returns list minus drop, keeping order.
func without(list []string, drop ...string) []string {
	out := []string{}
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

// only returns the names of list that keep accepts, keeping order.
func only(list []string, keep func(string) bool) []string {
	out := []string{}
	for _, s := range list {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// cost counts tokens independently of the snapshot's cached figures.
func cost(t testing.TB, snap *catalog.Snapshot, qualified []string) int {
	t.Helper()
	n := 0
	for _, q := range qualified {
		tool, err := snap.Lookup(q, nil)
		if err != nil {
			t.Fatalf("lookup %s: %v", q, err)
		}
		n += tokens.Count(string(tool.Definition()))
	}
	return n
}

func onConfig() policy.Config  { return cfg(func(c *policy.Config) { c.Enabled = policy.On }) }
func offConfig() policy.Config { return cfg(func(c *policy.Config) { c.Enabled = policy.Off }) }

func TestDecideAutoThreshold(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	deferrable := without(allTools, pinnedTools...)
	d := cost(t, snap, deferrable)
	tests := []struct {
		name          string
		window        int
		wantThreshold int
		wantActive    bool
	}{
		{"window far above: below threshold", 100 * d, 10 * d, false},
		{"one token short of the threshold", 10*d + 1, d + 1, false},
		{"exactly at the threshold", 10 * d, d, true},
		{"well above the threshold", 5 * d, (d + 1) / 2, true}, // ceil(d/2)
		{"unknown window uses 20,000 tokens", 0, 20000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Decide(snap, policy.Input{ContextWindow: tt.window})
			if p.Threshold != tt.wantThreshold {
				t.Errorf("Threshold = %d, want %d", p.Threshold, tt.wantThreshold)
			}
			if p.Active != tt.wantActive {
				t.Errorf("Active = %t, want %t (deferrable %d tokens, threshold %d): %s", p.Active, tt.wantActive, d, p.Threshold, p.Reason)
			}
			if p.DeferrableTokens != d {
				t.Errorf("DeferrableTokens = %d, want %d", p.DeferrableTokens, d)
			}
			if p.Config != policy.DefaultConfig() {
				t.Errorf("zero Input.Config gave %+v, want the defaults", p.Config)
			}
			wantVisible, wantDeferred := allTools, []string{}
			if tt.wantActive {
				wantVisible, wantDeferred = pinnedTools, deferrable
			}
			if got := names(p.Visible); !slices.Equal(got, wantVisible) {
				t.Errorf("Visible = %v, want %v", got, wantVisible)
			}
			if got := names(p.Deferred); !slices.Equal(got, wantDeferred) {
				t.Errorf("Deferred = %v, want %v", got, wantDeferred)
			}
			if p.Searchable().Len() != len(wantDeferred) {
				t.Errorf("Searchable has %d tools, want %d", p.Searchable().Len(), len(wantDeferred))
			}
			for _, tool := range p.Deferred {
				if !p.Searchable().Has(tool.Index) {
					t.Errorf("deferred %s is not searchable", tool.Qualified)
				}
			}
		})
	}
}

func TestDecideUnknownWindowBuiltin(t *testing.T) {
	snap := builtinSnapshot(t)
	if policy.UnknownWindowThreshold != 20000 {
		t.Errorf("UnknownWindowThreshold = %d, want 20,000 (10%% of 200,000)", policy.UnknownWindowThreshold)
	}
	p := policy.Decide(snap, policy.Input{})
	if p.Threshold != 20000 {
		t.Fatalf("Threshold = %d, want 20000", p.Threshold)
	}
	if p.DeferrableTokens < 20000 {
		t.Fatalf("the built-in catalog's deferrable tools cost %d tokens; this test needs at least 20,000", p.DeferrableTokens)
	}
	if !p.Active {
		t.Errorf("auto with an unknown window and %d deferrable tokens is not active: %s", p.DeferrableTokens, p.Reason)
	}
	if !strings.Contains(p.Reason, "unknown") {
		t.Errorf("Reason %q does not say the window is unknown", p.Reason)
	}
}

func TestDecideThresholdFormula(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	tests := []struct {
		window int
		pct    float64
		want   int // ceil(window * pct / 100), worked out by hand
	}{
		{200000, 10, 20000},
		{1001, 10, 101}, // 100.1
		{128000, 7.5, 9600},
		{33333, 3, 1000}, // 999.99
		{999, 0.5, 5},    // 4.995
		{1, 100, 1},
		{1, 1, 1}, // 0.01
		{1000000, 0, 0},
		{1000000, 100, 1000000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d×%g%%", tt.window, tt.pct), func(t *testing.T) {
			c := cfg(func(c *policy.Config) { c.ThresholdPct = tt.pct })
			p := policy.Decide(snap, policy.Input{Config: c, ContextWindow: tt.window})
			if p.Threshold != tt.want {
				t.Errorf("Threshold = %d, want %d", p.Threshold, tt.want)
			}
		})
	}
}

func TestDecideModes(t *testing.T) {
	small := catalogtest.Snapshot(t, testCatalog)
	big := builtinSnapshot(t)
	empty := catalogtest.Snapshot(t, `{"servers": []}`)
	tests := []struct {
		name   string
		snap   *catalog.Snapshot
		mode   policy.Mode
		window int
	}{
		{"on, small catalog, huge window", small, policy.On, 10_000_000},
		{"on, built-in catalog", big, policy.On, 200000},
		{"on, empty catalog", empty, policy.On, 200000},
		{"off, small catalog", small, policy.Off, 1000},
		{"off, built-in catalog, tiny window", big, policy.Off, 1000},
		{"off, unknown window", big, policy.Off, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Decide(tt.snap, policy.Input{Config: cfg(func(c *policy.Config) { c.Enabled = tt.mode }), ContextWindow: tt.window})
			var pinned, deferrable []string
			for _, tool := range tt.snap.Tools() {
				if tool.Pinned {
					pinned = append(pinned, tool.Qualified)
				} else {
					deferrable = append(deferrable, tool.Qualified)
				}
			}
			all := names(tt.snap.Tools())
			switch tt.mode {
			case policy.On:
				if !p.Active {
					t.Errorf("mode on is not active")
				}
				if got := names(p.Visible); !slices.Equal(got, append([]string{}, pinned...)) {
					t.Errorf("Visible = %v, want the pinned tools %v", got, pinned)
				}
				if got := names(p.Deferred); !slices.Equal(got, append([]string{}, deferrable...)) {
					t.Errorf("Deferred = %v, want %v", got, deferrable)
				}
			case policy.Off:
				if p.Active {
					t.Errorf("mode off is active")
				}
				if got := names(p.Visible); !slices.Equal(got, all) {
					t.Errorf("Visible has %d tools, want all %d", len(got), len(all))
				}
				if len(p.Deferred) != 0 || p.Searchable().Len() != 0 {
					t.Errorf("mode off deferred %d tools (searchable %d)", len(p.Deferred), p.Searchable().Len())
				}
			}
			if !strings.Contains(p.Reason, string(tt.mode)) {
				t.Errorf("Reason %q does not name the mode %q", p.Reason, tt.mode)
			}
		})
	}
}

func TestDecideZeroThresholdPct(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		wantActive bool
	}{
		{"something deferrable", testCatalog, true},
		{"one small deferrable tool", `{"servers": [{"name": "s", "tools": [{"name": "t"}]}]}`, true},
		{"only pinned tools", `{"servers": [{"name": "s", "alwaysLoad": true, "tools": [{"name": "t"}, {"name": "u"}]}]}`, false},
		{"only a tool-pinned tool", `{"servers": [{"name": "s", "tools": [{"name": "t", "_meta": {"anthropic/alwaysLoad": true}}]}]}`, false},
		{"no tools", `{"servers": []}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := catalogtest.Snapshot(t, tt.doc)
			c := cfg(func(c *policy.Config) { c.ThresholdPct = 0 })
			p := policy.Decide(snap, policy.Input{Config: c, ContextWindow: 1_000_000})
			if p.Threshold != 0 {
				t.Errorf("Threshold = %d, want 0", p.Threshold)
			}
			if p.Active != tt.wantActive {
				t.Errorf("Active = %t, want %t: %s", p.Active, tt.wantActive, p.Reason)
			}
		})
	}
}

func TestDecidePinned(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	pinned := map[string]bool{}
	for _, tool := range snap.Tools() {
		pinned[tool.Qualified] = tool.Pinned
	}
	for name, want := range map[string]bool{
		"core__echo":           true,  // server alwaysLoad
		"github__search_code":  true,  // _meta "anthropic/alwaysLoad": true
		"github__get_me":       false, // _meta value is the string "true"
		"github__create_issue": false,
	} {
		if pinned[name] != want {
			t.Errorf("%s: Pinned = %t, want %t", name, pinned[name], want)
		}
	}
	// A pinned tool stays listed even when its config asks for deferral.
	rules := map[string]policy.ServerRules{}
	mustUnmarshal(t, `{
		"core":   {"default_config": {"defer_loading": true}},
		"github": {"configs": {"search_code": {"defer_loading": true}}}
	}`, &rules)
	p := policy.Decide(snap, policy.Input{Config: onConfig(), Servers: rules})
	if got := names(p.Visible); !slices.Equal(got, pinnedTools) {
		t.Errorf("Visible = %v, want the pinned tools %v", got, pinnedTools)
	}
	for _, tool := range p.Deferred {
		if tool.Pinned {
			t.Errorf("pinned tool %s is deferred", tool.Qualified)
		}
	}
}

func mustUnmarshal(t testing.TB, doc string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(doc), v); err != nil {
		t.Fatalf("unmarshal %s: %v", doc, err)
	}
}

// The states of a tool in a plan.
const (
	visible  = "visible"
	deferred = "deferred"
	gone     = "gone" // disabled: neither listed, nor searchable, nor usable
)

func TestDecideServerRules(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	// defaults in mode on: pinned tools visible, the rest deferred.
	base := map[string]string{}
	for _, name := range allTools {
		base[name] = deferred
	}
	for _, name := range pinnedTools {
		base[name] = visible
	}
	with := func(changes map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name  string
		rules string // mcp_toolset-style settings by server, as JSON
		want  map[string]string
	}{
		{"no rules: global default is enabled and deferred", `{}`, base},
		{"default_config defer_loading false lists the server's tools", `{"github": {"default_config": {"defer_loading": false}}}`,
			with(map[string]string{"github__create_issue": visible, "github__list_issues": visible, "github__get_me": visible})},
		{"tool config overrides default_config (defer)", `{"github": {"default_config": {"defer_loading": false}, "configs": {"create_issue": {"defer_loading": true}}}}`,
			with(map[string]string{"github__list_issues": visible, "github__get_me": visible})},
		{"tool config overrides the global default (defer)", `{"slack": {"configs": {"post_message": {"defer_loading": false}}}}`,
			with(map[string]string{"slack__post_message": visible})},
		{"default_config enabled false removes every tool of the server, pinned ones too", `{"github": {"default_config": {"enabled": false}}}`,
			with(map[string]string{"github__create_issue": gone, "github__list_issues": gone, "github__search_code": gone, "github__get_me": gone})},
		{"tool config overrides default_config (enabled)", `{"github": {"default_config": {"enabled": false}, "configs": {"list_issues": {"enabled": true}}}}`,
			with(map[string]string{"github__create_issue": gone, "github__search_code": gone, "github__get_me": gone})},
		{"tool config enabled false removes one tool", `{"slack": {"configs": {"list_channels": {"enabled": false}}}}`,
			with(map[string]string{"slack__list_channels": gone})},
		{"enabled and defer_loading resolve independently", `{"github": {"default_config": {"enabled": true, "defer_loading": false}, "configs": {"create_issue": {"enabled": false}, "list_issues": {"enabled": true}}}}`,
			with(map[string]string{"github__create_issue": gone, "github__list_issues": visible, "github__get_me": visible})},
		{"configs are by bare tool name and per server", `{"jira": {"configs": {"create_issue": {"enabled": false}}}}`,
			with(map[string]string{"jira__create_issue": gone})},
		{"configs for a tool that does not exist change nothing", `{"github": {"configs": {"nonexistent": {"enabled": false, "defer_loading": false}}}}`, base},
		{"rules of a server that does not exist change nothing", `{"gitlab": {"default_config": {"enabled": false}}}`, base},
		{"explicit global defaults change nothing", `{"github": {"default_config": {"enabled": true, "defer_loading": true}}}`, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := map[string]policy.ServerRules{}
			mustUnmarshal(t, tt.rules, &rules)
			p := policy.Decide(snap, policy.Input{Config: onConfig(), Servers: rules})
			checkStates(t, p, tt.want)
			// Pinned is what stays listed with tool search on, in either mode.
			off := policy.Decide(snap, policy.Input{Config: offConfig(), Servers: rules})
			for _, tool := range snap.Tools() {
				want := tt.want[tool.Qualified] == visible
				if p.Pinned(tool) != want || off.Pinned(tool) != want {
					t.Errorf("Pinned(%s) = %t (on), %t (off); want %t", tool.Qualified, p.Pinned(tool), off.Pinned(tool), want)
				}
			}

			// The same rules with tool search off: disabled tools are still gone, every
			// other tool is listed.
			wantOff := map[string]string{}
			for k, v := range tt.want {
				wantOff[k] = v
				if v == deferred {
					wantOff[k] = visible
				}
			}
			checkStates(t, off, wantOff)
		})
	}
}

// checkStates checks every tool of want against the plan: where it is listed, whether it
// is usable, searchable and found by Lookup, and that the token figures add up.
func checkStates(t *testing.T, p *policy.Plan, want map[string]string) {
	t.Helper()
	var wantVisible, wantDeferred, wantUsable []string
	for _, tool := range p.Snapshot.Tools() {
		switch want[tool.Qualified] {
		case visible:
			wantVisible = append(wantVisible, tool.Qualified)
			wantUsable = append(wantUsable, tool.Qualified)
		case deferred:
			wantDeferred = append(wantDeferred, tool.Qualified)
			wantUsable = append(wantUsable, tool.Qualified)
		case gone:
		default:
			t.Fatalf("no state given for %s", tool.Qualified)
		}
	}
	if got := names(p.Visible); !slices.Equal(got, append([]string{}, wantVisible...)) {
		t.Errorf("Visible = %v, want %v", got, wantVisible)
	}
	if got := names(p.Deferred); !slices.Equal(got, append([]string{}, wantDeferred...)) {
		t.Errorf("Deferred = %v, want %v", got, wantDeferred)
	}
	for _, tool := range p.Snapshot.Tools() {
		state := want[tool.Qualified]
		if got := p.Usable(tool); got != (state != gone) {
			t.Errorf("Usable(%s) = %t, want %t", tool.Qualified, got, state != gone)
		}
		if got := p.Searchable().Has(tool.Index); got != (state == deferred) {
			t.Errorf("Searchable().Has(%s) = %t, want %t", tool.Qualified, got, state == deferred)
		}
		found, err := p.Lookup(tool.Qualified)
		switch {
		case state == gone && !errors.Is(err, catalog.ErrUnknownTool):
			t.Errorf("Lookup(%s) of a disabled tool = %v, %v; want ErrUnknownTool", tool.Qualified, found, err)
		case state != gone && (err != nil || found != tool):
			t.Errorf("Lookup(%s) = %v, %v; want the tool", tool.Qualified, found, err)
		}
	}
	if got, want := p.TotalTokens, cost(t, p.Snapshot, wantUsable); got != want {
		t.Errorf("TotalTokens = %d, want %d (the usable tools)", got, want)
	}
	if got, want := p.VisibleTokens, cost(t, p.Snapshot, wantVisible); got != want {
		t.Errorf("VisibleTokens = %d, want %d (the visible tools)", got, want)
	}
	if p.Active {
		if got, want := p.DeferrableTokens, cost(t, p.Snapshot, wantDeferred); got != want {
			t.Errorf("DeferrableTokens = %d, want %d (the deferred tools)", got, want)
		}
		if p.TotalTokens != p.VisibleTokens+p.DeferrableTokens {
			t.Errorf("TotalTokens %d != VisibleTokens %d + DeferrableTokens %d", p.TotalTokens, p.VisibleTokens, p.DeferrableTokens)
		}
	} else if p.VisibleTokens != p.TotalTokens {
		t.Errorf("inactive plan: VisibleTokens %d != TotalTokens %d", p.VisibleTokens, p.TotalTokens)
	}
}

func TestDecideTokenFigures(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	scope := policy.Scope{Servers: []string{"github", "slack", "core"}}
	inScope := only(allTools, func(n string) bool { return !strings.HasPrefix(n, "jira__") && !strings.HasPrefix(n, "secret__") })
	deferrable := without(inScope, pinnedTools...)
	tests := []struct {
		name           string
		in             policy.Input
		wantVisible    []string
		wantDeferrable []string
		wantTotal      []string
	}{
		{"on", policy.Input{Config: onConfig()}, pinnedTools, without(allTools, pinnedTools...), allTools},
		{"off", policy.Input{Config: offConfig()}, allTools, without(allTools, pinnedTools...), allTools},
		{"auto, inactive", policy.Input{ContextWindow: 1 << 30}, allTools, without(allTools, pinnedTools...), allTools},
		{"on, scoped", policy.Input{Config: onConfig(), Scope: scope}, pinnedTools, deferrable, inScope},
		{"off, scoped", policy.Input{Config: offConfig(), Scope: scope}, inScope, deferrable, inScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Decide(snap, tt.in)
			if got := names(p.Visible); !slices.Equal(got, tt.wantVisible) {
				t.Errorf("Visible = %v, want %v", got, tt.wantVisible)
			}
			if got, want := p.TotalTokens, cost(t, snap, tt.wantTotal); got != want {
				t.Errorf("TotalTokens = %d, want %d", got, want)
			}
			if got, want := p.VisibleTokens, cost(t, snap, tt.wantVisible); got != want {
				t.Errorf("VisibleTokens = %d, want %d", got, want)
			}
			if got, want := p.DeferrableTokens, cost(t, snap, tt.wantDeferrable); got != want {
				t.Errorf("DeferrableTokens = %d, want %d", got, want)
			}
			if p.TotalTokens <= 0 || p.VisibleTokens <= 0 || p.DeferrableTokens <= 0 {
				t.Errorf("token figures must be positive here: %+v", p)
			}
		})
	}
}

func TestDecideReason(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	nDeferrable := len(allTools) - len(pinnedTools)
	tests := []struct {
		name string
		in   policy.Input
	}{
		{"auto inactive, known window", policy.Input{ContextWindow: 200000}},
		{"auto active, known window", policy.Input{Config: cfg(func(c *policy.Config) { c.ThresholdPct = 0.5 }), ContextWindow: 1000}},
		{"auto, unknown window", policy.Input{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Decide(snap, tt.in)
			if !strings.Contains(p.Reason, strconv.Itoa(nDeferrable)+" deferrable") {
				t.Errorf("Reason %q does not count the %d deferrable tools", p.Reason, nDeferrable)
			}
			nums := []int{p.DeferrableTokens, p.Threshold}
			if tt.in.ContextWindow > 0 {
				nums = append(nums, tt.in.ContextWindow)
			}
			for _, n := range nums {
				if !mentions(p.Reason, n) {
					t.Errorf("Reason %q does not mention %d", p.Reason, n)
				}
			}
			rel := "below"
			if p.Active {
				rel = "at or above"
			}
			if !strings.Contains(p.Reason, rel) {
				t.Errorf("Reason %q does not say %q (Active %t)", p.Reason, rel, p.Active)
			}
		})
	}
}

func TestScopeAllows(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	server := func(names ...string) func(string) bool {
		return func(q string) bool { return slices.Contains(names, strings.SplitN(q, "__", 2)[0]) }
	}
	tests := []struct {
		name  string
		scope policy.Scope
		want  []string
	}{
		{"zero scope allows every tool", policy.Scope{}, allTools},
		{"empty lists are the zero scope", policy.Scope{Servers: []string{}, Tools: []string{}}, allTools},
		{"one server", policy.Scope{Servers: []string{"slack"}}, only(allTools, server("slack"))},
		{"server glob *", policy.Scope{Servers: []string{"git*"}}, only(allTools, server("github"))},
		{"server glob ?", policy.Scope{Servers: []string{"?lack"}}, only(allTools, server("slack"))},
		{"server glob class", policy.Scope{Servers: []string{"[a-d]*"}}, only(allTools, server("core"))},
		{"several servers", policy.Scope{Servers: []string{"slack", "core"}}, only(allTools, server("slack", "core"))},
		{"server pattern is whole-name", policy.Scope{Servers: []string{"git"}}, []string{}},
		{"tool glob on qualified names", policy.Scope{Tools: []string{"*__list_*"}}, []string{"github__list_issues", "slack__list_channels"}},
		{"tool glob matching one server's tools", policy.Scope{Tools: []string{"github__*"}}, only(allTools, server("github"))},
		{"exact qualified tool", policy.Scope{Tools: []string{"jira__create_issue"}}, []string{"jira__create_issue"}},
		{"tool glob across servers", policy.Scope{Tools: []string{"*__create_issue"}}, []string{"github__create_issue", "jira__create_issue"}},
		{"a bare tool name matches nothing", policy.Scope{Tools: []string{"create_issue"}}, []string{}},
		{"union of servers and tools", policy.Scope{Servers: []string{"slack"}, Tools: []string{"github__create_*"}},
			[]string{"github__create_issue", "slack__post_message", "slack__list_channels"}},
		{"union with overlap lists each tool once", policy.Scope{Servers: []string{"core"}, Tools: []string{"core__echo", "secret__*"}},
			[]string{"core__echo", "secret__obliterate"}},
		{"a malformed pattern admits nothing", policy.Scope{Servers: []string{"["}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.scope.IsZero(), len(tt.scope.Servers)+len(tt.scope.Tools) == 0; got != want {
				t.Errorf("IsZero() = %t, want %t", got, want)
			}
			got := []string{}
			for _, tool := range snap.Tools() {
				if tt.scope.Allows(tool) {
					got = append(got, tool.Qualified)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Allows admits %v, want %v", got, tt.want)
			}
			// The plan holds exactly the tools in scope.
			for _, mode := range []policy.Config{onConfig(), offConfig()} {
				p := policy.Decide(snap, policy.Input{Config: mode, Scope: tt.scope})
				listed := append(names(p.Visible), names(p.Deferred)...)
				slices.Sort(listed)
				want := slices.Clone(tt.want)
				slices.Sort(want)
				if !slices.Equal(listed, want) {
					t.Errorf("mode %s: plan lists %v, want %v", mode.Enabled, listed, want)
				}
				if p.TotalTokens != cost(t, snap, tt.want) {
					t.Errorf("mode %s: TotalTokens %d counts tools outside the scope", mode.Enabled, p.TotalTokens)
				}
			}
		})
	}
}

func TestScopeCheck(t *testing.T) {
	tests := []struct {
		name    string
		scope   policy.Scope
		bad     string
		wantErr bool
	}{
		{"zero scope", policy.Scope{}, "", false},
		{"valid globs", policy.Scope{Servers: []string{"git*", "?lack", "[a-z]*"}, Tools: []string{"*__list_*", "github__create_issue"}}, "", false},
		{"unclosed class in servers", policy.Scope{Servers: []string{"ok", "["}}, "[", true},
		{"unclosed class in tools", policy.Scope{Tools: []string{"github__[a-"}}, "github__[a-", true},
		{"trailing escape", policy.Scope{Tools: []string{`github__\`}}, `github__\`, true},
		{"first malformed pattern is reported", policy.Scope{Servers: []string{"a["}, Tools: []string{"b["}}, "a[", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.scope.Check()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, policy.ErrConfig) {
				t.Fatalf("Check() = %v, want an error wrapping ErrConfig", err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tt.bad)) {
				t.Errorf("Check() = %q, want it to quote the pattern %q", err, tt.bad)
			}
		})
	}
}

// A scope's catalog holds its tools alone, and a plan over it is the plan over the whole
// catalog with the scope, tool for tool; the zero scope's catalog is the catalog itself.
func TestScopeCatalog(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	if got := (policy.Scope{}).Catalog(snap); got != snap {
		t.Error("the zero scope's catalog is not the catalog itself")
	}
	for _, scope := range []policy.Scope{
		{Servers: []string{"github", "slack", "core"}},
		{Tools: []string{"github__*", "*__echo"}},
		{Servers: []string{"nothing"}},
	} {
		own := scope.Catalog(snap)
		var want []string
		for _, tool := range snap.Tools() {
			if scope.Allows(tool) {
				want = append(want, tool.Qualified)
			}
		}
		var got []string
		for _, tool := range own.Tools() {
			got = append(got, tool.Qualified)
		}
		if !slices.Equal(got, want) {
			t.Errorf("the catalog of %+v has %v, want %v", scope, got, want)
		}
		in := policy.Input{Config: onConfig(), Scope: scope}
		p, whole := policy.Decide(own, in), policy.Decide(snap, in)
		if !slices.Equal(names(p.Visible), names(whole.Visible)) || !slices.Equal(names(p.Deferred), names(whole.Deferred)) || p.TotalTokens != whole.TotalTokens || p.Active != whole.Active {
			t.Errorf("the plan of %+v over its catalog lists %v and defers %v, over the whole %v and %v", scope, names(p.Visible), names(p.Deferred), names(whole.Visible), names(whole.Deferred))
		}
	}
}

func TestPlanLookup(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	scoped := policy.Decide(snap, policy.Input{Config: onConfig(), Scope: policy.Scope{Servers: []string{"github", "slack", "core"}}})
	full := policy.Decide(snap, policy.Input{Config: onConfig()})
	tests := []struct {
		name    string
		plan    *policy.Plan
		lookup  string
		want    string
		wantErr error
	}{
		{"qualified name", scoped, "github__list_issues", "github__list_issues", nil},
		{"qualified name of a pinned tool", scoped, "core__echo", "core__echo", nil},
		{"surrounding space is ignored", scoped, "  slack__post_message\n", "slack__post_message", nil},
		{"unique bare name", scoped, "post_message", "slack__post_message", nil},
		{"bare name shared with an out-of-scope tool resolves in scope", scoped, "create_issue", "github__create_issue", nil},
		{"bare name shared by two usable tools is ambiguous", full, "create_issue", "", catalog.ErrAmbiguous},
		{"out-of-scope qualified name", scoped, "secret__obliterate", "", catalog.ErrUnknownTool},
		{"out-of-scope bare name", scoped, "obliterate", "", catalog.ErrUnknownTool},
		{"nonexistent name", scoped, "nope__nothing", "", catalog.ErrUnknownTool},
		{"empty name", scoped, "", "", catalog.ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.plan.Lookup(tt.lookup)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || got != nil {
					t.Fatalf("Lookup(%q) = %v, %v; want nil, %v", tt.lookup, got, err, tt.wantErr)
				}
				if tt.wantErr == catalog.ErrAmbiguous {
					for _, q := range []string{"github__create_issue", "jira__create_issue"} {
						if !strings.Contains(err.Error(), q) {
							t.Errorf("ambiguity error %q does not list %s", err, q)
						}
					}
				}
				return
			}
			if err != nil || got == nil || got.Qualified != tt.want {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", tt.lookup, got, err, tt.want)
			}
		})
	}
}

// An out-of-scope tool must be indistinguishable from one that does not exist.
func TestPlanLookupOutOfScopeLooksAbsent(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	p := policy.Decide(snap, policy.Input{Scope: policy.Scope{Tools: []string{"github__*", "slack__*"}}})
	rules := map[string]policy.ServerRules{}
	mustUnmarshal(t, `{"github": {"configs": {"get_me": {"enabled": false}}}}`, &rules)
	disabled := policy.Decide(snap, policy.Input{Servers: rules})
	tests := []struct {
		name          string
		plan          *policy.Plan
		hidden, nonex string
	}{
		{"qualified, out of scope", p, "secret__obliterate", "secret__obliterata"},
		{"bare, out of scope", p, "obliterate", "obliterata"},
		{"pinned, out of scope", p, "core__echo", "core__ecko"},
		{"disabled by config", disabled, "github__get_me", "github__get_mf"},
		{"out of scope vs unknown server", p, "jira__create_issue", "zzzz__create_issue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errHidden := tt.plan.Lookup(tt.hidden)
			_, errNone := tt.plan.Lookup(tt.nonex)
			if errHidden == nil || errNone == nil {
				t.Fatalf("Lookup errors = %v, %v; want both to fail", errHidden, errNone)
			}
			if _, err := snap.Lookup(tt.hidden, nil); err != nil {
				t.Fatalf("%s must exist in the catalog for this test: %v", tt.hidden, err)
			}
			a := strings.ReplaceAll(errHidden.Error(), tt.hidden, "NAME")
			b := strings.ReplaceAll(errNone.Error(), tt.nonex, "NAME")
			if a != b {
				t.Errorf("out-of-scope error %q differs from unknown-name error %q", a, b)
			}
		})
	}
}

// mentions reports whether text holds n, written plainly (20000) or with thousands
// separators (20,000).
func mentions(text string, n int) bool {
	plain := strconv.Itoa(n)
	grouped := plain
	for i := len(plain) - 3; i > 0; i -= 3 {
		grouped = grouped[:i] + "," + grouped[i:]
	}
	for _, s := range []string{plain, grouped} {
		for i := 0; ; {
			j := strings.Index(text[i:], s)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(s)
			// a whole number, not part of a longer one
			if (start == 0 || !isNumChar(text[start-1])) && (end == len(text) || !isNumChar(text[end]) || text[end] == ',' && (end+1 == len(text) || text[end+1] == ' ')) {
				return true
			}
			i = start + 1
		}
	}
	return false
}

func isNumChar(c byte) bool { return c >= '0' && c <= '9' || c == ',' }

// A partly set Config takes defaults for what it leaves out, so that a front setting only
// the mode does not advertise a search limit of 0.
func TestDecidePartialConfig(t *testing.T) {
	snap := catalogtest.Snapshot(t, `{"servers": [{"name": "s", "tools": [{"name": "a", "inputSchema": {"type": "object"}}]}]}`)
	plan := policy.Decide(snap, policy.Input{Config: policy.Config{Enabled: policy.On}})
	if got := plan.Config; got.MaxSearchLimit != policy.DefaultMaxSearchLimit || got.SearchDefaultLimit != policy.DefaultSearchDefaultLimit || got.Enabled != policy.On {
		t.Errorf("Config = %+v, want mode on with the default limits", got)
	}
	plan = policy.Decide(snap, policy.Input{Config: policy.Config{ThresholdPct: 0, MaxSearchLimit: 3}})
	if got := plan.Config; got.Enabled != policy.Auto || got.MaxSearchLimit != 3 || got.SearchDefaultLimit != 3 {
		t.Errorf("Config = %+v, want auto, max 3, default limit 3", got)
	}
}

func TestScopeAllowsServer(t *testing.T) {
	tests := []struct {
		scope policy.Scope
		want  map[string]bool
	}{
		{policy.Scope{}, map[string]bool{"github": true, "slack": true}},
		{policy.Scope{Servers: []string{"git*"}}, map[string]bool{"github": true, "gitlab": true, "slack": false}},
		{policy.Scope{Tools: []string{"slack__*", "github__get_*"}}, map[string]bool{"github": true, "slack": true, "gitlab": false}},
		// A tool pattern that names no server reaches none for sure.
		{policy.Scope{Tools: []string{"*search*"}}, map[string]bool{"github": false, "brave-search": false}},
	}
	for _, tc := range tests {
		for server, want := range tc.want {
			if got := tc.scope.AllowsServer(server); got != want {
				t.Errorf("%+v.AllowsServer(%q) = %t, want %t", tc.scope, server, got, want)
			}
		}
	}
}
