package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// configCatalogTimeout bounds starting a config's servers to list their tools.
const configCatalogTimeout = 2 * time.Minute

// configCatalog starts the servers of a gateway config (and serves the catalog files
// beside them, as toolshed serve --catalog does), lists every tool as the gateway serves
// it, and stops them again: the catalog the search log's names refer to. A server that
// does not start is left out with a warning; the rest still count.
func configCatalog(ctx context.Context, path string, catalogFiles []string, stderr io.Writer) (*catalog.Snapshot, error) {
	cfg, warns, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "toolshed: warning: %s: %s\n", path, w)
	}
	opts := gateway.Options{Mode: policy.Off, Log: io.Discard}
	for _, f := range catalogFiles {
		sources, problems := catalog.ReadFile(f)
		for _, p := range problems {
			fmt.Fprintf(stderr, "toolshed: warning: %v\n", p)
		}
		opts.Catalogs = append(opts.Catalogs, sources...)
	}
	g, err := gateway.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	what := fmt.Sprintf("the %d servers", len(g.Statuses()))
	if len(g.Statuses()) == 1 {
		what = "the server"
	}
	fmt.Fprintf(stderr, "toolshed stats: starting %s of %s to list their tools\n", what, path)
	ctx, cancel := context.WithTimeout(ctx, configCatalogTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	g.WaitReady(ctx)

	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, st, ""); err != nil {
		return nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolshed-stats", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()

	var servers []string
	bySrv := map[string]*catalog.Source{}
	for _, s := range g.Statuses() {
		if s.Err != nil && s.Tools == 0 {
			fmt.Fprintf(stderr, "toolshed: warning: %s: server %q did not start (%v): its tools are not in the catalog\n", path, s.Name, s.Err)
		}
		servers = append(servers, s.Name)
		bySrv[s.Name] = &catalog.Source{Server: s.Name, Origin: path}
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing the tools of %s: %w", path, err)
		}
		server := serverOf(tool.Name, servers)
		if server == "" {
			continue // not a server's tool (none is, with tool search off)
		}
		t := *tool
		t.Name = strings.TrimPrefix(tool.Name, server+catalog.Separator)
		raw, err := json.Marshal(&t)
		if err != nil {
			return nil, err
		}
		bySrv[server].Tools = append(bySrv[server].Tools, raw)
	}
	sources := make([]catalog.Source, 0, len(servers))
	for _, s := range servers {
		sources = append(sources, *bySrv[s])
	}
	snap, problems := catalog.Build(sources)
	for _, p := range problems {
		fmt.Fprintf(stderr, "toolshed: warning: %v\n", p)
	}
	if snap.Len() == 0 {
		return nil, fmt.Errorf("no server of %s listed a tool; check that they start (toolshed serve --config %s shows why)", path, path)
	}
	return snap, nil
}

// serverOf returns the server whose qualified names prefix name, the longest when
// several do ("a" and "a__b" both prefix "a__b__c"), or "".
func serverOf(name string, servers []string) string {
	best := ""
	for _, s := range servers {
		if strings.HasPrefix(name, s+catalog.Separator) && len(s) > len(best) {
			best = s
		}
	}
	return best
}
