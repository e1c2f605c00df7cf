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

// loadConfig reads the config file a command's --config names and prints its warnings
// on stderr, also when the file is refused: they can say why. Its error wraps
// config.ErrConfig, which run turns into exit status 2 (see config.ErrConfig for the
// rule every command follows).
func loadConfig(file string, stderr io.Writer) (*config.Config, error) {
	cfg, warns, err := config.Load(file)
	for _, w := range warns {
		fmt.Fprintf(stderr, "toolshed: warning: %s: %s\n", file, w)
	}
	return cfg, err
}

// loadServersConfig is loadConfig for a command that starts the config's servers: a
// config with no server to start is refused too (config.CheckServers).
func loadServersConfig(file string, stderr io.Writer) (*config.Config, error) {
	cfg, err := loadConfig(file, stderr)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckServers(file); err != nil {
		return nil, err
	}
	return cfg, nil
}

// configCatalog starts the servers of cfg (read from file), waits until each has listed
// its tools or failed, stops them, and returns the catalog a gateway would serve,
// overrides applied: what lint checks, what tokens counts and what stats' tool names
// refer to. Servers that fail are reported on stderr ("so its tools are not <verb>"),
// and the others count.
func configCatalog(ctx context.Context, cfg *config.Config, file, verb string, stderr io.Writer) (*catalog.Snapshot, error) {
	g, err := gateway.New(cfg, gateway.Options{Log: stderr})
	if err != nil {
		return nil, err
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
	// As long as the longest first start may take: a server's connect_timeout, else
	// the bound of a stdio server that may be installing (see gateway.Options).
	wait := config.DefaultFirstStartTimeout
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
		return nil, fmt.Errorf("no server of %s started; see the warnings above", file)
	}
	return g.Catalog(), nil
}
