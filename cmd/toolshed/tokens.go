package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/tokens"
)

// tokensOutput is the --json form of toolshed tokens.
type tokensOutput struct {
	Encoding      string  `json:"encoding"`
	Tools         int     `json:"tools"`
	Servers       int     `json:"servers"`
	ContextWindow int     `json:"context_window"`
	Mode          string  `json:"mode"`
	ThresholdPct  float64 `json:"threshold_pct"`
	// ThresholdTokens is the deferrable-token count at which auto turns search on.
	ThresholdTokens int `json:"threshold_tokens"`
	// TotalTokens is what a model sees before work starts without tool search.
	TotalTokens int `json:"total_tokens"`
	// TotalPct is TotalTokens as a share of the context window (0 when unknown).
	TotalPct float64 `json:"total_pct"`
	// VisibleTokens is what stays listed with tool search on: pinned and non-deferred
	// tools; PinnedTools counts them.
	VisibleTokens int `json:"visible_tokens"`
	PinnedTools   int `json:"pinned_tools"`
	// BridgeTokens is the cost of tool_search, tool_describe and tool_call.
	BridgeTokens int `json:"bridge_tokens"`
	// WithSearchTokens is VisibleTokens + BridgeTokens: what a model sees with tool search.
	WithSearchTokens int     `json:"with_search_tokens"`
	SavingsPct       float64 `json:"savings_pct"`
	// Active reports whether the configured mode (auto by default) turns search on.
	Active      bool         `json:"active"`
	Reason      string       `json:"reason"`
	ServerCosts []serverCost `json:"servers_detail"`
	ToolCosts   []toolCost   `json:"tools_detail"`
}

type serverCost struct {
	Name   string  `json:"name"`
	Tools  int     `json:"tools"`
	Tokens int     `json:"tokens"`
	Pct    float64 `json:"pct"`
}

type toolCost struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Tokens int    `json:"tokens"`
	Pinned bool   `json:"pinned,omitempty"`
}

func runTokens(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "catalog `FILE` (repeatable; default: the built-in catalog)")
	window := fs.Int("context-window", 200000, "the model's context window in `TOKENS` (0: unknown, auto then turns on at 20,000)")
	configFile := fs.String("config", "", "a gateway config `FILE`: its servers are started and what the gateway would serve is counted, overrides applied, with its tools.tool_search settings (a file of settings alone applies them to the catalog)")
	top := fs.Int("top", 20, "list the `N` most expensive tools (0: all)")
	asJSON := fs.Bool("json", false, "print JSON, with every tool")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--catalog FILE]... [--context-window TOKENS] [--config FILE] [--top N] [--json]",
			"Shows what the catalog's tool definitions cost a model (o200k_base tokens), per server and per tool, and what a model sees with tool search and without.")
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErr("unexpected arguments %q; catalogs are given with --catalog", rest)
	}
	if *window < 0 {
		return usageErr("--context-window must be 0 (unknown) or a number of tokens, got %d", *window)
	}
	snap, in, err := tokensInput(catalogs, *configFile, *window, flagGiven(fs, "context-window"), stderr)
	if err != nil {
		return err
	}
	plan := policy.Decide(snap, in)
	on := in
	on.Config.Enabled = policy.On
	onPlan := policy.Decide(snap, on)
	bridgeTokens := bridge.Tokens(bridge.Definitions(onPlan))

	out := tokensOutput{
		Encoding: tokens.Encoding, Tools: snap.Len(), Servers: len(snap.Servers()), ContextWindow: in.ContextWindow,
		Mode: string(in.Config.Enabled), ThresholdPct: in.Config.ThresholdPct, ThresholdTokens: plan.Threshold,
		TotalTokens: onPlan.TotalTokens, VisibleTokens: onPlan.VisibleTokens, PinnedTools: len(onPlan.Visible),
		BridgeTokens: bridgeTokens, WithSearchTokens: onPlan.VisibleTokens + bridgeTokens,
		Active: plan.Active, Reason: plan.Reason,
	}
	out.TotalPct = percent.Of(out.TotalTokens, in.ContextWindow)
	out.SavingsPct = percent.Of(out.TotalTokens-out.WithSearchTokens, out.TotalTokens)
	for _, s := range snap.Servers() {
		out.ServerCosts = append(out.ServerCosts, serverCost{s.Name, s.Tools, s.Tokens, percent.Of(s.Tokens, out.TotalTokens)})
	}
	for _, t := range snap.Tools() {
		out.ToolCosts = append(out.ToolCosts, toolCost{t.Qualified, t.Server, snap.ToolTokens(t), t.Pinned})
	}
	sort.SliceStable(out.ToolCosts, func(i, j int) bool { return out.ToolCosts[i].Tokens > out.ToolCosts[j].Tokens })
	if *asJSON {
		return writeJSON(stdout, out)
	}

	fmt.Fprintf(stdout, "%s on %s cost %s tokens (%s, counted as Anthropic tool definitions).\n", count(out.Tools, "tool"), count(out.Servers, "server"), thousands(out.TotalTokens), out.Encoding)
	if in.ContextWindow > 0 {
		fmt.Fprintf(stdout, "That is %s of a %s-token context window.\n", percent.Text(out.TotalPct), thousands(in.ContextWindow))
	}
	fmt.Fprintln(stdout)
	rows := [][]string{{"SERVER", "TOOLS", "TOKENS", "SHARE"}}
	for _, s := range out.ServerCosts {
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Tools), thousands(s.Tokens), percent.Text(s.Pct)})
	}
	table(stdout, rows)
	fmt.Fprintln(stdout)
	n := len(out.ToolCosts)
	if *top > 0 && *top < n {
		n = *top
		fmt.Fprintf(stdout, "The %d most expensive tools (--top 0 lists all):\n", n)
	}
	rows = [][]string{{"TOOL", "TOKENS"}}
	for _, t := range out.ToolCosts[:n] {
		rows = append(rows, []string{t.Name, thousands(t.Tokens)})
	}
	table(stdout, rows)
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "Before work starts, a model sees:\n")
	fmt.Fprintf(stdout, "  without tool search  %s tokens\n", thousands(out.TotalTokens))
	fmt.Fprintf(stdout, "  with tool search      %s tokens (3 bridge tools: %s; %d tools listed directly: %s)\n",
		thousands(out.WithSearchTokens), thousands(out.BridgeTokens), out.PinnedTools, thousands(out.VisibleTokens))
	fmt.Fprintf(stdout, "  savings               %s\n", percent.Text(out.SavingsPct))
	state := "OFF"
	if out.Active {
		state = "ON"
	}
	fmt.Fprintf(stdout, "\nMode %s turns tool search %s: %s.\n", out.Mode, state, out.Reason)
	return nil
}

// tokensInput returns the catalog tokens counts and what decides its plan. Without
// --config: the catalog files (or the built-in catalog) and the default settings. With a
// config that lists servers: they are started and the catalog is what a gateway over the
// config would serve (overrides applied), decided with the config's tool search
// settings, per-server defer settings and context window. With a config of settings
// alone: the catalog files with those settings. --context-window, when given, wins over
// the config's context_window.
func tokensInput(catalogs []string, file string, window int, windowGiven bool, stderr io.Writer) (*catalog.Snapshot, policy.Input, error) {
	in := policy.Input{Config: policy.DefaultConfig(), ContextWindow: window}
	if file == "" {
		snap, err := loadCatalog(catalogs, stderr)
		return snap, in, err
	}
	cfg, err := loadConfig(file, stderr)
	if err != nil {
		return nil, in, err
	}
	in.Config = cfg.ToolSearch
	if !windowGiven {
		in.ContextWindow = cfg.ContextWindow
	}
	if len(cfg.Servers) == 0 {
		snap, err := loadCatalog(catalogs, stderr)
		return snap, in, err
	}
	if len(catalogs) > 0 {
		return nil, in, usageErr("%s lists servers, which tokens starts and counts; give --catalog or a --config with servers, not both", file)
	}
	if err := cfg.CheckServers(file); err != nil {
		return nil, in, err
	}
	in.Servers = map[string]policy.ServerRules{}
	for _, s := range cfg.Servers {
		in.Servers[s.Name] = s.Rules
	}
	snap, err := configCatalog(context.Background(), cfg, file, "counted", stderr)
	return snap, in, err
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// table prints rows as columns: the first left-aligned, the others right-aligned.
func table(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		line := fmt.Sprintf("%-*s", widths[0], r[0])
		for i, c := range r[1:] {
			line += fmt.Sprintf("  %*s", widths[i+1], c)
		}
		fmt.Fprintln(w, line)
	}
}

// thousands formats n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
