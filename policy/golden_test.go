package policy_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/policy"
)

// TestDecideBuiltinGolden records how the built-in catalog is split under typical
// settings, per server: tools listed, tools deferred, tools left out.
func TestDecideBuiltinGolden(t *testing.T) {
	snap := builtinSnapshot(t)
	rules := map[string]policy.ServerRules{}
	mustUnmarshal(t, `{
		"github":  {"default_config": {"defer_loading": false}, "configs": {"delete_file": {"enabled": false}, "create_or_update_file": {"defer_loading": true}}},
		"everything": {"default_config": {"enabled": false}},
		"filesystem": {"configs": {"read_file": {"defer_loading": false}}}
	}`, &rules)
	cases := []struct {
		name string
		in   policy.Input
	}{
		{"auto, 200K window", policy.Input{ContextWindow: 200_000}},
		{"auto, 1M window at 20%", policy.Input{Config: cfg(func(c *policy.Config) { c.ThresholdPct = 20 }), ContextWindow: 1_000_000}},
		{"auto, unknown window", policy.Input{}},
		{"on", policy.Input{Config: onConfig()}},
		{"off", policy.Input{Config: offConfig()}},
		{"on, scope github and slack", policy.Input{Config: onConfig(), Scope: policy.Scope{Servers: []string{"github", "slack"}}}},
		{"on, scope by tool glob", policy.Input{Config: onConfig(), Scope: policy.Scope{Tools: []string{"*__list_*", "memory__*"}}}},
		{"on, server rules", policy.Input{Config: onConfig(), Servers: rules}},
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "built-in catalog: %d tools, %d servers\n", snap.Len(), len(snap.Servers()))
	for _, tc := range cases {
		p := policy.Decide(snap, tc.in)
		fmt.Fprintf(&out, "\n== %s\n", tc.name)
		fmt.Fprintf(&out, "active=%t threshold=%d total=%d visible=%d deferrable=%d\n", p.Active, p.Threshold, p.TotalTokens, p.VisibleTokens, p.DeferrableTokens)
		fmt.Fprintf(&out, "%-20s %7s %8s %7s\n", "server", "visible", "deferred", "absent")
		counts := map[string][3]int{}
		for _, t := range p.Visible {
			c := counts[t.Server]
			c[0]++
			counts[t.Server] = c
		}
		for _, t := range p.Deferred {
			c := counts[t.Server]
			c[1]++
			counts[t.Server] = c
		}
		for _, t := range snap.Tools() {
			if !p.Usable(t) {
				c := counts[t.Server]
				c[2]++
				counts[t.Server] = c
			}
		}
		for _, s := range snap.Servers() {
			c := counts[s.Name]
			if c[0]+c[1]+c[2] != s.Tools {
				t.Errorf("%s: server %s: %d+%d+%d tools accounted for, want %d", tc.name, s.Name, c[0], c[1], c[2], s.Tools)
			}
			fmt.Fprintf(&out, "%-20s %7d %8d %7d\n", s.Name, c[0], c[1], c[2])
		}
		checkPlanInvariants(t, tc.name, snap, p)
	}
	golden.Check(t, filepath.Join("testdata", "plans_builtin.golden"), out.Bytes())
}

// checkPlanInvariants checks what must hold of every plan.
func checkPlanInvariants(t *testing.T, name string, snap *catalog.Snapshot, p *policy.Plan) {
	t.Helper()
	sum := func(tools []*catalog.Tool) int {
		n := 0
		for _, t := range tools {
			n += snap.ToolTokens(t)
		}
		return n
	}
	var usable []*catalog.Tool
	for _, tool := range snap.Tools() {
		if p.Usable(tool) {
			usable = append(usable, tool)
		}
	}
	if got := sum(usable); p.TotalTokens != got {
		t.Errorf("%s: TotalTokens = %d, want %d", name, p.TotalTokens, got)
	}
	if got := sum(p.Visible); p.VisibleTokens != got {
		t.Errorf("%s: VisibleTokens = %d, want %d", name, p.VisibleTokens, got)
	}
	if len(p.Visible)+len(p.Deferred) != len(usable) {
		t.Errorf("%s: %d visible + %d deferred != %d usable", name, len(p.Visible), len(p.Deferred), len(usable))
	}
	if p.Active {
		if got := sum(p.Deferred); p.DeferrableTokens != got {
			t.Errorf("%s: DeferrableTokens = %d, want %d", name, p.DeferrableTokens, got)
		}
	} else if len(p.Deferred) != 0 {
		t.Errorf("%s: inactive plan defers %d tools", name, len(p.Deferred))
	}
	for _, tool := range p.Deferred {
		if tool.Pinned {
			t.Errorf("%s: pinned %s is deferred", name, tool.Qualified)
		}
	}
}
