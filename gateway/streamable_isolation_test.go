package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// Two sessions making the same calls at once, with the same request ids and progress
// tokens: each POST gets its own session's progress, sampling request and result, and
// nothing of the other's. (The sampling calls go to two servers, after the progress
// calls: toolshed refuses a server's sampling request while two clients' requests run
// on it, as it cannot tell whose it is.)
func TestHTTPNoCrossSessionMessages(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	samplingID := regexp.MustCompile(`"id":("?[\w-]+"?),"method":"sampling/createMessage"`)
	posts := map[string]func(context.Context, string) *http.Response{}
	for _, who := range []string{"A", "B"} {
		posts[who] = rawSessionWith(t, endpoint, `{"sampling":{}}`, new(string))
	}
	steps := map[string]int{"A": 3, "B": 5}
	server := map[string]string{"A": "alpha", "B": "beta"}
	both := func(f func(who string, post func(context.Context, string) *http.Response)) {
		var wg sync.WaitGroup
		for who, post := range posts {
			wg.Go(func() { f(who, post) })
		}
		wg.Wait()
	}
	for round := range 5 {
		both(func(who string, post func(context.Context, string) *http.Response) {
			n := steps[who]
			resp := post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":%d}}}`, n))
			b := bodyWithin(t, "a slow call", resp)
			resp.Body.Close()
			if strings.Count(b, fmt.Sprintf(`"total":%d}`, n)) != n || strings.Count(b, "notifications/progress") != n || !strings.Contains(b, fmt.Sprintf("done %d steps", n)) {
				t.Errorf("%s round %d: the slow call's stream:\n%s", who, round, b)
			}
		})
		both(func(who string, post func(context.Context, string) *http.Response) {
			resp := post(context.Background(), `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"`+server[who]+`__sample","arguments":{}}}`)
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("%s round %d: the sampling call was answered as %s: %s", who, round, ct, bodyWithin(t, "the sampling call", resp))
				return
			}
			var got []string
			for ev := range sseEvents(resp.Body) {
				got = append(got, ev)
				if m := samplingID.FindStringSubmatch(ev); m != nil {
					a := post(context.Background(), `{"jsonrpc":"2.0","id":`+m[1]+`,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"model-`+who+`"}}`)
					a.Body.Close()
				}
			}
			all := strings.Join(got, "\n")
			if strings.Count(all, "sampling/createMessage") != 1 || !strings.Contains(all, "model model-"+who+" said") {
				t.Errorf("%s round %d: the sampling call's stream:\n%s", who, round, all)
			}
		})
	}
}
