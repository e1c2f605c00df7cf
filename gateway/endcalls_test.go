package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// startSlowCall calls alpha__slow for far longer than any test and returns once the
// upstream has reported progress (the call is running there), with a channel that
// gets the call's outcome.
func startSlowCall(t *testing.T, cs *mcp.ClientSession, progressed <-chan struct{}) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__slow",
			Arguments: map[string]any{"steps": 1_000_000}, Meta: mcp.Meta{"progressToken": "slow"}})
		done <- err
	}()
	select {
	case <-progressed:
	case err := <-done:
		t.Fatalf("the slow call ended before it progressed: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the slow call reported no progress within a minute")
	}
	return done
}

// progressSignal returns client options whose progress handler signals the channel.
func progressSignal() (*mcp.ClientOptions, <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}}, ch
}

// A client that ends its Streamable HTTP session (DELETE) while a call runs gets its
// answer at once, and the call is cancelled upstream, rather than the session waiting
// for the call to finish (the SDK closes a session only once its requests are answered).
func TestHTTPDeleteCancelsCalls(t *testing.T) {
	t.Parallel()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	url := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	opts, progressed := progressSignal()
	cs, closeFn, err := dialHTTP(url, nil, opts, "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	done := startSlowCall(t, cs, progressed)

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	deleted := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("DELETE: %v", err)
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	select {
	case code := <-deleted:
		if code/100 != 2 {
			t.Errorf("DELETE of the session = %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("DELETE of a session with a call in flight did not return within a minute")
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call of the deleted session did not end within a minute")
	}
	other := httpClient(t, url, nil, nil, "")
	waitFor(t, "the upstream to see the slow call cancelled", func() bool {
		return resultText(call(t, other, "alpha__cancelled", map[string]any{})) == "1"
	})
}

// Stopping the gateway (its Run context) ends the calls in flight, upstream too, instead
// of waiting for them: an upstream session closes only once its calls are answered.
func TestStopCancelsCalls(t *testing.T) {
	t.Parallel()
	g, err := gateway.New(&config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stopped := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(stopped)
	}()
	readyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	g.WaitReady(readyCtx)
	cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, st, ""); err != nil {
		t.Fatal(err)
	}
	opts, progressed := progressSignal()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, sessionOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	done := startSlowCall(t, cs, progressed)
	stop()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not stop within a minute of its context ending, with a call in flight")
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call in flight did not end within a minute of the gateway stopping")
	}
}
