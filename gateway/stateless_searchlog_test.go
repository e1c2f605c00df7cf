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

// TestStatelessHTTPSearchLogLinks: in stateless mode every POST is a session of its
// own, so a call is tied to the search that found it by who sent both (the token and
// its profile), within a short window: a client's call of the tool its search returned
// is recorded with that search's rank and query, and another token's call of the same
// tool with none. (A session's name in the log was made from its address when it had
// no id, and a stateless POST's session, freed after its POST, left its address to a
// later one: a call was then linked to the search of another token.)
func TestStatelessHTTPSearchLogLinks(t *testing.T) {
	ctx := context.Background()
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"a": {Token: "token-a"}, "b": {Token: "token-b"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On, SearchLog: log})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	const rounds = 30
	for i := range rounds {
		rawPOST(t, ctx, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"add two numbers"}}}`, i), as("token-a"))
		runtime.GC()
		for _, token := range []string{"token-a", "token-b"} {
			rawPOST(t, ctx, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__add","arguments":{"a":1,"b":2}}}}`, i), as(token))
		}
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(searches) != rounds || len(calls) != 2*rounds {
		t.Fatalf("recorded %d searches and %d calls, want %d and %d", len(searches), len(calls), rounds, 2*rounds)
	}
	linked := map[string]int{}
	for _, c := range calls {
		if c.Rank == 1 && c.Query == "add two numbers" {
			linked[c.Profile]++
		} else if c.Rank != 0 || c.Query != "" {
			t.Errorf("call of profile %s recorded with rank %d and query %q", c.Profile, c.Rank, c.Query)
		}
	}
	if linked["a"] != rounds {
		t.Errorf("%d of token-a's %d calls were tied to its search", linked["a"], rounds)
	}
	if linked["b"] != 0 {
		t.Errorf("%d of token-b's calls were tied to token-a's search", linked["b"])
	}
}
