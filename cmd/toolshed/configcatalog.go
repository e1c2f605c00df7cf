package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
)

// configCatalog starts the servers of a gateway config, waits until each has listed its
// tools or failed, stops them, and returns the catalog a gateway would serve, overrides
// applied: what lint checks and what stats' tool names refer to. Servers that fail are
// reported on stderr ("so its tools are not <verb>"), and the others count.
func configCatalog(ctx context.Context, file, verb string, stderr io.Writer) (*catalog.Snapshot, []catalog.Problem, error) {
	cfg, warns, err := config.Load(file)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "toolshed: warning: %s: %s\n", file, w)
	}
	if len(cfg.Servers) == 0 {
		return nil, nil, fmt.Errorf("%s lists no servers; list them under mcpServers, or pass a catalog file with --catalog", file)
	}
	g, err := gateway.New(cfg, gateway.Options{Log: stderr})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	wait := config.DefaultConnectTimeout
	for _, s := range cfg.Servers {
		wait = max(wait, s.ConnectTimeout)
	}
	readyCtx, cancelReady := context.WithTimeout(ctx, wait+5*time.Second)
	defer cancelReady()
	g.WaitReady(readyCtx)
	up := 0
	for _, st := range g.Statuses() {
		switch {
		case st.State == gateway.Ready:
			up++
		case st.Err != nil:
			fmt.Fprintf(stderr, "toolshed: warning: server %s is %s, so its tools are not %s: %v\n", st.Name, st.State, verb, st.Err)
		default:
			fmt.Fprintf(stderr, "toolshed: warning: server %s is %s, so its tools are not %s\n", st.Name, st.State, verb)
		}
	}
	if up == 0 {
		return nil, nil, fmt.Errorf("no server of %s started; see the warnings above", file)
	}
	return g.Catalog(), nil, nil
}
