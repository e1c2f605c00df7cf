package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/policy"
)

// The serve command's stderr is what a user sees of the gateway: an MCP client such as
// Claude Code shows it as "[ERROR] Server stderr". Every line says one true thing once:
// a server that started or failed, what the clients support, and a summary of what
// tools/list costs once every server has started or failed.

// stdinHint is what serve says when its stdin is a terminal: a person ran it, where an
// MCP client is expected to start it and talk MCP on stdin.
func stdinHint(stdinIsTerminal bool) string {
	if !stdinIsTerminal {
		return ""
	}
	return "toolshed: waiting for an MCP client on stdin. An MCP client starts `toolshed serve` itself " +
		"(put the command in its mcpServers config); to try it by hand, run `toolshed serve --http 8080` " +
		"and point a client at http://127.0.0.1:8080/mcp. Ctrl-C quits."
}

// progress prints the gateway's events on stderr.
type progress struct {
	w           io.Writer
	mu          sync.Mutex
	last        map[string]gateway.Status
	lastSummary string
	// hinted is set once serve has said how to try tool search (see searchHint).
	hinted bool
}

func newProgress(w io.Writer, upstreams int, waitForClient bool) *progress {
	if upstreams > 0 && !waitForClient {
		fmt.Fprintf(w, "toolshed: starting %s\n", count(upstreams, "upstream server"))
	}
	return &progress{w: w, last: map[string]gateway.Status{}}
}

func (p *progress) event(e gateway.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := e.Upstream; s != nil {
		p.upstream(*s)
	}
	if c := e.Clients; c != nil {
		p.clients(*c)
	}
	if a := e.Assembled; a != nil && a.Settled {
		if line := summaryLine(*a); line != p.lastSummary {
			fmt.Fprintln(p.w, line)
			p.lastSummary = line
		}
		if hint := searchHint(*a); hint != "" && !p.hinted {
			fmt.Fprintln(p.w, hint)
			p.hinted = true
		}
	}
}

// searchHint tells the user who starts serve with a few servers how to try tool
// search, which auto mode keeps off below its threshold, so that it would otherwise
// never be seen: "" when tool search is on or was turned off by hand.
func searchHint(a gateway.Summary) string {
	if a.Mode != policy.Auto || a.Active {
		return ""
	}
	return "toolshed: tool search is off (auto, few tools); to try it, add --tool-search on"
}

// upstream prints a server's change of state, once: ready (or a new tool count while
// ready), failed with when it restarts, disabled.
func (p *progress) upstream(s gateway.Status) {
	last, seen := p.last[s.Name]
	p.last[s.Name] = s
	switch s.State {
	case gateway.Ready:
		switch {
		case !seen || last.State != gateway.Ready:
			fmt.Fprintf(p.w, "toolshed: %-20s ready   %4d tools  %7s tokens\n", s.Name, s.Tools, thousands(s.Tokens))
		case last.Tools != s.Tools || last.Tokens != s.Tokens:
			fmt.Fprintf(p.w, "toolshed: %-20s now    %4d tools  %7s tokens\n", s.Name, s.Tools, thousands(s.Tokens))
		}
	case gateway.Failed:
		if !seen || last.State != gateway.Failed || last.Restarts != s.Restarts {
			fmt.Fprintf(p.w, "toolshed: %-20s failed  %v; restarting in %v\n", s.Name, s.Err, s.Retry)
		}
	case gateway.NeedsSignIn:
		if !seen || last.State != gateway.NeedsSignIn {
			fmt.Fprintf(p.w, "toolshed: %-20s %v\n", s.Name, s.Err)
		}
	case gateway.Disabled:
		if !seen {
			fmt.Fprintf(p.w, "toolshed: %-20s disabled in the config\n", s.Name)
		}
	}
}

// clients prints a change of what the upstreams are told the clients support.
func (p *progress) clients(c gateway.ClientsChange) {
	if c.Servers == 0 {
		return // only toolshed's own catalogs, which ask clients nothing
	}
	who := "a client disconnected"
	if c.Joined != "" {
		who = c.Joined + " connected"
	}
	if c.Starting {
		fmt.Fprintf(p.w, "toolshed: %s, which supports %s; starting %s\n", who, c.Support, count(c.Servers, "upstream server"))
		return
	}
	all := fmt.Sprintf("the %d connected clients all support %s", c.Clients, c.Support)
	if c.Clients == 1 {
		all = "the connected client supports " + c.Support
	}
	verb := "reconnect"
	if c.Servers == 1 {
		verb = "reconnects"
	}
	fmt.Fprintf(p.w, "toolshed: %s; %s, so %s %s to offer just that (calls in flight finish first)\n", who, all, count(c.Servers, "upstream server"), verb)
}

// summaryLine says how many servers are up and what tools/list costs a client.
func summaryLine(a gateway.Summary) string {
	line := fmt.Sprintf("toolshed: %d of %d servers ready, %s tools. ", a.ServersUp, a.Servers, thousands(a.Tools))
	switch {
	case a.Mode == policy.Auto && a.Active:
		line += "Tool search is on (auto): " + a.Reason + "; "
	case a.Mode == policy.Auto:
		line += "Tool search is off (auto): " + a.Reason + "; "
	case a.Active:
		line += "Tool search is on: "
	default:
		line += "Tool search is off: "
	}
	if !a.Active {
		return line + fmt.Sprintf("tools/list lists all %s tools (%s tokens).", thousands(a.Listed), thousands(a.TokensListed))
	}
	listed := "the 3 bridge tools"
	if a.Listed > 0 {
		listed += fmt.Sprintf(" and %s pinned tools", thousands(a.Listed))
	}
	line += fmt.Sprintf("tools/list lists %s (%s tokens) in place of %s tools (%s tokens)", listed, thousands(a.TokensListed), thousands(a.Tools), thousands(a.TokensAll))
	if a.TokensAll > 0 && a.TokensListed < a.TokensAll {
		line += ", " + percent.OfText(a.TokensAll-a.TokensListed, a.TokensAll) + " fewer tokens"
	}
	return line + "."
}

// count is n things, in words: "1 upstream server", "2 upstream servers".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}
