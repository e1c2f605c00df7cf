package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// serveStderr runs a gateway as `toolshed serve` does over stdio, in front of the npm
// memory server, lets a client like Claude Code connect and list the tools, and returns
// what the serve command printed (the server's own stderr aside).
func serveStderr(t *testing.T, mode policy.Mode, window int) string {
	t.Helper()
	mcmd, margs := testupstream.Memory(t)
	cfg := &config.Config{Servers: []config.Server{{Name: "memory", Type: config.Stdio, Command: mcmd, Args: margs}}}
	g, err := gateway.New(cfg, gateway.Options{Mode: mode, ContextWindow: window, WaitForClient: true, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	out := &testupstream.SyncBuffer{}
	g.OnEvent(newProgress(out, len(g.Statuses()), true).event)
	ctx, stop := runGateway(g)
	defer stop()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, st, ""); err != nil {
		t.Fatal(err)
	}
	// What Claude Code 2.1.332 declares.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.332"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), " servers ready, ") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary line:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out.String()
}

// The serve command's stderr over stdio, from start to the summary, with tool search
// on, off, and auto on either side of its threshold.
func TestServeStderr(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   policy.Mode
		window int
	}{
		{"on", policy.On, 0},
		{"off", policy.Off, 0},
		{"auto-on", policy.Auto, 5000},
		{"auto-off", policy.Auto, 200000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden.Check(t, "testdata/serve-stderr-"+tc.name+".golden", []byte(serveStderr(t, tc.mode, tc.window)))
		})
	}
}

// The printer says each thing once: a server that reports ready again (or relists the
// same tools) prints nothing, a new tool count prints one line, a failure prints one
// line with when it retries, the summary waits until every server has started or
// failed and is printed again only when it changes, and how to try tool search when
// auto mode keeps it off is said once.
func TestServeStderrEvents(t *testing.T) {
	var out strings.Builder
	p := newProgress(&out, 2, false)
	summary := gateway.Summary{ServersUp: 1, Servers: 2, Tools: 9, TokensAll: 918, TokensListed: 245, Listed: 0, Deferred: 9, Mode: policy.On, Active: true, Reason: "tool search is on"}
	ready := gateway.Status{Name: "memory", State: gateway.Ready, Tools: 9, Tokens: 918}
	autoOff := gateway.Summary{ServersUp: 1, Servers: 2, Tools: 10, TokensAll: 1001, TokensListed: 1001, Listed: 10, Mode: policy.Auto, Reason: "10 deferrable tools cost 1,001 tokens, below the auto threshold of 20,000 tokens"}
	autoOffLater := autoOff
	autoOffLater.ServersUp, autoOffLater.Tools, autoOffLater.Listed, autoOffLater.TokensAll, autoOffLater.TokensListed = 2, 11, 11, 1080, 1080
	autoOffLater.Reason = "11 deferrable tools cost 1,080 tokens, below the auto threshold of 20,000 tokens"
	for _, e := range []gateway.Event{
		{Upstream: &gateway.Status{Name: "memory", State: gateway.Connecting}},
		{Upstream: &ready},
		{Assembled: &summary}, // not settled: the other server is still starting
		{Upstream: &ready},
		{Upstream: &gateway.Status{Name: "broken", State: gateway.Failed, Err: errors.New("could not start: exit status 1"), Restarts: 1, Retry: time.Second}},
		{Upstream: &gateway.Status{Name: "broken", State: gateway.Failed, Err: errors.New("could not start: exit status 1"), Restarts: 1, Retry: time.Second}},
		{Assembled: settled(summary)},
		{Assembled: settled(summary)},
		{Upstream: &gateway.Status{Name: "memory", State: gateway.Ready, Tools: 10, Tokens: 1001}},
		{Clients: &gateway.ClientsChange{Support: "sampling and roots", Clients: 2, Joined: "inspector 0.17.0", Servers: 1}},
		{Clients: &gateway.ClientsChange{Support: "roots", Clients: 1, Servers: 1}},
		{Clients: &gateway.ClientsChange{Support: "roots", Clients: 1, Servers: 0}},
		{Upstream: &gateway.Status{Name: "broken", State: gateway.Connecting, Restarts: 1}},
		{Upstream: &gateway.Status{Name: "broken", State: gateway.Failed, Err: errors.New("could not start: exit status 1"), Restarts: 2, Retry: 2 * time.Second}},
		{Upstream: &gateway.Status{Name: "off", State: gateway.Disabled}},
		// Auto mode turns tool search off: the hint how to try it comes once.
		{Assembled: settled(autoOff)},
		{Assembled: settled(autoOffLater)},
	} {
		p.event(e)
	}
	golden.Check(t, "testdata/serve-stderr-events.golden", []byte(out.String()))
}

func settled(s gateway.Summary) *gateway.Summary {
	s.Settled = true
	return &s
}

func TestStdinHint(t *testing.T) {
	if got := stdinHint(false); got != "" {
		t.Errorf("stdin is not a terminal, hint %q", got)
	}
	golden.Check(t, "testdata/serve-stdin-hint.golden", []byte(stdinHint(true)+"\n"))
}

// runGateway runs g until stop is called, which cancels ctx, g's context, and waits for
// g to end.
func runGateway(g *gateway.Gateway) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(done)
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}
