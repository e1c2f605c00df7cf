package gateway

import (
	"crypto/sha256"
	"hash"
	"strconv"
	"sync"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
)

// catalogWarnings prints what is wrong in the tool lists (a tool that cannot be loaded,
// a schema that cannot check arguments) once per change of the list it is in. The
// catalog is reassembled whenever any server starts, stops or relists, and a server
// that restarts comes back with the same list: printing every list's problems at every
// reassembly repeated one server's warnings dozens of times an hour.
type catalogWarnings struct {
	mu sync.Mutex
	// printed holds, by origin (see catalog.Source.Origin), the content key of the
	// tools whose problems were printed last.
	printed map[string][32]byte

	// Checking a schema means compiling it (half a second for the distinct schemas of
	// 10,000 tools), which the first tools/list has no need to wait for: report queues
	// the tools in pending, in the order of the assemblies, and one goroutine, started
	// while checking is false, drains it and prints what it finds.
	checkMu  sync.Mutex
	pending  []schemaCheck
	checking bool
}

// schemaCheck is a tool whose input schema is still to be checked for report.
type schemaCheck struct {
	origin string
	tool   *catalog.Tool
}

// report prints the problems of snap, built from sources with problems, of each origin
// whose tools changed since its problems were last printed. Origins that are not in
// sources (servers that are down) keep their key: coming back with the same tools
// prints nothing.
func (w *catalogWarnings) report(g *Gateway, sources []catalog.Source, snap *catalog.Snapshot, problems []catalog.Problem) {
	// Hashed as they are read: a copy of every definition to hash at once was 68 MB
	// of garbage at 10,000 tools.
	hashes := map[string]hash.Hash{}
	nul := []byte{0}
	for _, src := range sources {
		h := hashes[src.Origin]
		if h == nil {
			h = sha256.New()
			hashes[src.Origin] = h
		}
		for _, raw := range src.Tools {
			h.Write(raw)
			h.Write(nul)
		}
	}
	keys := map[string][32]byte{}
	for origin, h := range hashes {
		keys[origin] = [32]byte(h.Sum(nil))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.printed == nil {
		w.printed = map[string][32]byte{}
	}
	changed := map[string]bool{}
	origins := map[string]string{} // server -> origin, for the servers of changed origins
	for _, src := range sources {
		if prev, ok := w.printed[src.Origin]; !ok || prev != keys[src.Origin] {
			changed[src.Origin] = true
			origins[src.Server] = src.Origin
		}
	}
	for origin := range changed {
		w.printed[origin] = keys[origin]
	}
	for _, p := range problems {
		if changed[p.Origin] {
			g.logf("catalog: %v", p)
		}
	}
	var checks []schemaCheck
	for _, t := range snap.Tools() {
		if origin, ok := origins[t.Server]; ok {
			checks = append(checks, schemaCheck{origin, t})
		}
	}
	if len(checks) == 0 {
		return
	}
	w.checkMu.Lock()
	w.pending = append(w.pending, checks...)
	start := !w.checking
	w.checking = true
	w.checkMu.Unlock()
	if start {
		go w.check(g)
	}
}

// check prints the schema problems of the queued tools until none is left, compiling
// each distinct schema once. The schemas it compiles are not kept (see
// bridge.SchemaProblem): most tools of a large catalog are never called, and a call
// compiles its tool's schema when it needs it.
func (w *catalogWarnings) check(g *Gateway) {
	var checker bridge.SchemaChecker
	for {
		w.checkMu.Lock()
		batch := w.pending
		w.pending = nil
		if len(batch) == 0 {
			w.checking = false
		}
		w.checkMu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, c := range batch {
			if err := checker.Problem(c.tool); err != nil {
				g.logf("catalog: %v", catalog.Problem{Origin: c.origin, Server: c.tool.Server, Tool: strconv.Quote(c.tool.Name), Err: err})
			}
		}
	}
}

// schemasChecked reports whether every queued schema has been checked (and its
// problem printed).
func (w *catalogWarnings) schemasChecked() bool {
	w.checkMu.Lock()
	defer w.checkMu.Unlock()
	return !w.checking
}
