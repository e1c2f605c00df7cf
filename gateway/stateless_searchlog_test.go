package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

// TestStatelessHTTPSearchLogLinksNothing: in stateless mode every POST is a session of
// its own, so no call can be the same session's as an earlier search; the search log
// must link none to one (rank and query), whoever sent it. A session's name in the log
// was made from its address when it had no id, and a stateless POST's session, freed
// after its POST, leaves its address to a later one: a call was then linked to the
// search of another POST, possibly another token's, and the learned field learned it.
func TestStatelessHTTPSearchLogLinksNothing(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, SearchLog: log})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
	const rounds = 60
	for i := range rounds {
		rawPOST(t, ctx, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"add two numbers"}}}`, i), nil)
		runtime.GC()
		rawPOST(t, ctx, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__add","arguments":{"a":1,"b":2}}}}`, i), nil)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(searches) != rounds || len(calls) != rounds {
		t.Fatalf("recorded %d searches and %d calls, want %d of each", len(searches), len(calls), rounds)
	}
	linked := 0
	for _, c := range calls {
		if c.Rank != 0 || c.Query != "" {
			linked++
		}
	}
	if linked > 0 {
		t.Errorf("%d of %d stateless calls were linked to the search of another POST", linked, rounds)
	}
}
