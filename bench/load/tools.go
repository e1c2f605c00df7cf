package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/scale"
)

// -mode tools measures toolshed serving a large catalog: -tools tool definitions (real
// ones, repeated under distinct server names by internal/scale, as the search
// benchmarks use) given with --catalog, with tool search on. It reports:
//
//   - for each of -starts launches of the catalog alone (no Node server's start in the
//     figure): launch → listening, launch → the first complete tools/list (a client
//     that connects as soon as toolshed listens and lists at once, answered once
//     every catalog server has settled: the list waits for them), toolshed's CPU time
//     until then, and its RSS -settle after the list, and its peak;
//   - then, with server-everything beside the catalog as server "echo", tool_search
//     against tool_call echo__echo over HTTP, p50 and p99: one session, one request at
//     a time, the two interleaved, so that the machine's load weighs on both alike.
//     The echo call is what the same front costs: JSON-RPC over Streamable HTTP, the
//     session, the call's way to a Node server and back; search should add no more
//     than its own few tens of µs to it. And the RSS around it.
//
// Run it several times, back to back with the build it is compared against: the
// machine's load moves every figure.

// toolsQuery is the search the latency loop sends: an everyday request, matched by
// many of the repeated tools, so that the answer is a full page of results.
const toolsQuery = "read the contents of a text file"

// writeScaleCatalog writes a catalog of exactly n real tools to dir/catalog.json, in
// the format of bench/*/catalog.json, and returns its path and its size in bytes.
func writeScaleCatalog(root, dir string, n int) (string, int64, error) {
	real, err := scale.Real(filepath.Join(root, "bench"))
	if err != nil {
		return "", 0, err
	}
	type server struct {
		Name  string            `json:"name"`
		Tools []json.RawMessage `json:"tools"`
	}
	var file struct {
		Servers []server `json:"servers"`
	}
	for _, s := range scale.Catalog(real, n) {
		file.Servers = append(file.Servers, server{Name: s.Server, Tools: s.Tools})
	}
	data, err := json.Marshal(file)
	if err != nil {
		return "", 0, err
	}
	path := filepath.Join(dir, "catalog.json")
	return path, int64(len(data)), os.WriteFile(path, data, 0o644)
}

// writeEchoConfig writes an mcpServers config of server-everything alone into dir, as
// server "echo": the scale catalog already holds an "everything" (its definitions).
func writeEchoConfig(dir, node, modules string) (string, error) {
	p := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("@modelcontextprotocol/server-everything is not installed at %s: run `bash scripts/deps.sh` from the repository root, or pass -modules", p)
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"echo": map[string]any{"command": node, "args": []string{p, "stdio"}},
	}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "servers.json")
	return path, os.WriteFile(path, data, 0o644)
}

// runTools runs -mode tools (see above).
func runTools(o options, root, dir string) error {
	cat, size, err := writeScaleCatalog(root, dir, o.tools)
	if err != nil {
		return err
	}
	config, err := writeEchoConfig(dir, o.node, o.modules)
	if err != nil {
		return err
	}
	fmt.Printf("catalog: %d tools, %s of definitions\n", o.tools, mb(size))
	ctx := context.Background()
	hc := newHTTPClient(o.token, 2)

	// The start: the catalog alone, so that no Node server's start is in the figure.
	for run := 1; run <= o.starts; run++ {
		line, err := firstList(ctx, o, dir, cat, hc)
		if err != nil {
			return err
		}
		fmt.Printf("start %d: %s\n", run, line)
	}

	// The requests: the catalog and server-everything, as server "echo".
	p, err := startGatewayIn(dir, o.toolshed, config, o.token, append([]string{"--catalog", cat}, o.extra...))
	if err != nil {
		return err
	}
	defer p.stop()
	cs, err := connect(ctx, p.endpoint, hc, "load-tools")
	if err != nil {
		return fmt.Errorf("connecting: %v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}
	defer cs.Close()
	if err := waitReady(ctx, cs, "echo__echo"); err != nil {
		return fmt.Errorf("%v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}

	// One search and one call first, so that neither pays a first use in the figures.
	search := func() error {
		text, err := callTool(ctx, cs, "tool_search", map[string]any{"query": toolsQuery})
		if err == nil && !strings.Contains(text, `"matches":[{"name"`) {
			err = fmt.Errorf("tool_search %q found nothing: %.300s", toolsQuery, text)
		}
		return err
	}
	echo := func(i int) error {
		msg := fmt.Sprintf("tools-%d", i)
		text, err := callTool(ctx, cs, "tool_call", map[string]any{"name": "echo__echo", "arguments": map[string]any{"message": msg}})
		if err == nil && !strings.Contains(text, "Echo: "+msg) {
			err = fmt.Errorf("echo %q answered %.300s", msg, text)
		}
		return err
	}
	if err := search(); err != nil {
		return err
	}
	if err := echo(-1); err != nil {
		return err
	}
	time.Sleep(o.settle)
	settled, _ := rss(p.cmd.Process.Pid)

	var searchLat, echoLat []time.Duration
	cpu0 := cpuTime(p.cmd.Process.Pid)
	for i := 0; i < o.requests; i++ {
		t := time.Now()
		if err := search(); err != nil {
			return fmt.Errorf("tool_search %d: %v", i, err)
		}
		searchLat = append(searchLat, time.Since(t))
		t = time.Now()
		if err := echo(i); err != nil {
			return fmt.Errorf("echo %d: %v", i, err)
		}
		echoLat = append(echoLat, time.Since(t))
	}
	cpu := cpuTime(p.cmd.Process.Pid) - cpu0
	after, peak := rss(p.cmd.Process.Pid)
	slices.Sort(searchLat)
	slices.Sort(echoLat)
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }

	fmt.Printf("with the echo server: RSS %s settled (%s after the first call), %s after %d searches and calls, peak %s\n", mb(settled), o.settle, mb(after), 2*o.requests, mb(peak))
	fmt.Printf("tool_search: p50 %s, p99 %s; tool_call echo__echo: p50 %s, p99 %s (%d each, one at a time, interleaved)\n",
		us(percentile(searchLat, 50)), us(percentile(searchLat, 99)), us(percentile(echoLat, 50)), us(percentile(echoLat, 99)), o.requests)
	fmt.Printf("search / echo at p50: %.2f×; toolshed CPU %d µs per request\n",
		float64(percentile(searchLat, 50))/float64(percentile(echoLat, 50)), (cpu / time.Duration(2*o.requests)).Microseconds())
	if o.markdown {
		fmt.Println()
		fmt.Println("| tools | definitions | RSS settled / peak | search p50 / p99 | echo p50 / p99 |")
		fmt.Println("|---:|---:|---:|---:|---:|")
		fmt.Printf("| %d | %s | %s / %s | %s / %s | %s / %s |\n", o.tools, mb(size), mb(settled), mb(peak),
			us(percentile(searchLat, 50)), us(percentile(searchLat, 99)), us(percentile(echoLat, 50)), us(percentile(echoLat, 99)))
	}
	return nil
}

// firstList launches toolshed with the catalog alone, connects as soon as it listens,
// lists the tools, and says how long each took from launch, the CPU time toolshed used
// until the list was answered (the figure a loaded machine moves least), and what
// toolshed's RSS was -settle after the list, and its peak.
func firstList(ctx context.Context, o options, dir, cat string, hc *http.Client) (string, error) {
	launch := time.Now()
	p, err := startGatewayIn(dir, o.toolshed, "", o.token, append([]string{"--catalog", cat}, o.extra...))
	if err != nil {
		return "", err
	}
	defer p.stop()
	listening := time.Since(launch)
	cs, err := connect(ctx, p.endpoint, hc, "load-tools")
	if err != nil {
		return "", fmt.Errorf("connecting: %v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("tools/list: %v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}
	listed := time.Since(launch)
	cpu := cpuTime(p.cmd.Process.Pid)
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	if !slices.Contains(names, "tool_search") {
		return "", fmt.Errorf("the first tools/list has no tool_search (is tool search on?): %s", strings.Join(names, ", "))
	}
	time.Sleep(o.settle)
	settled, peak := rss(p.cmd.Process.Pid)
	return fmt.Sprintf("listening %d ms, first tools/list answered %d ms after launch (%d tools), toolshed's CPU until then %d ms; RSS %s %s after it, peak %s",
		listening.Milliseconds(), listed.Milliseconds(), len(list.Tools), cpu.Milliseconds(), mb(settled), o.settle, mb(peak)), nil
}
