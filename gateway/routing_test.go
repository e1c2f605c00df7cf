package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// logged collects the log messages a client receives.
type logged struct {
	mu   sync.Mutex
	data []string
}

func (l *logged) has(text string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.data, text)
}

func (l *logged) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.data)
}

// loggingClient connects a client as profile that takes every log message, and calls
// progress (if set) on progress notifications.
func loggingClient(t *testing.T, h *harness, profile string, progress func()) (*mcp.ClientSession, *logged) {
	t.Helper()
	l := &logged{}
	cs := h.client(profile, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			l.mu.Lock()
			l.data = append(l.data, fmt.Sprint(req.Params.Data))
			l.mu.Unlock()
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				progress()
			}
		},
	})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return cs, l
}

// An upstream's log message carries no link to the call it is about: it reaches a client
// only when no other client may use that server, and toolshed's log otherwise; never
// the client whose call happens to be running when it comes.
func TestLogMessageNeverToAnotherSession(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "logs"), testServer("beta", "basic")},
		Profiles: map[string]config.Profile{
			"a": {}, "b": {},
			"c": {Scope: policy.Scope{Servers: []string{"beta"}}},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	a, aLogs := loggingClient(t, h, "a", nil)
	_, cLogs := loggingClient(t, h, "c", nil)

	// a is the only client that may use alpha (c's profile cannot): the log message of
	// its call reaches it.
	if got := resultText(call(t, a, "alpha__log", map[string]any{"text": "a's own"})); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	waitFor(t, "a's log message to reach a", func() bool { return aLogs.has("a's own") })

	// b joins. A log message alpha sends after a's call ended, while b's call runs,
	// could be a's as well as b's: it reaches neither.
	var once sync.Once
	running := make(chan struct{})
	b, bLogs := loggingClient(t, h, "b", func() { once.Do(func() { close(running) }) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		params := &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{"steps": 400}}
		params.SetProgressToken("b")
		b.CallTool(ctx, params)
	}()
	select {
	case <-running:
	case <-time.After(20 * time.Second):
		t.Fatal("b's call did not start")
	}
	if got := resultText(call(t, a, "alpha__log_later", map[string]any{"text": "after a's call", "ms": 100})); got != "will log" {
		t.Fatalf("log_later = %q", got)
	}
	waitFor(t, "the log message sent after a's call", func() bool {
		return strings.Contains(h.log.String(), `"after a's call"`) || bLogs.has("after a's call") || aLogs.has("after a's call")
	})
	cancel()
	<-slowDone
	if bLogs.has("after a's call") {
		t.Errorf("the log message sent after a's call reached b, whose call was running: b got %q", bLogs.all())
	}
	if aLogs.has("after a's call") || !strings.Contains(h.log.String(), `upstream alpha: info: "after a's call"`) {
		t.Errorf("the log message of a server two clients use went to a client (a got %q), want toolshed's log:\n%s", aLogs.all(), h.log.String())
	}
	if got := cLogs.all(); len(got) > 0 {
		t.Errorf("c, whose profile cannot use alpha, got log messages %q", got)
	}
}

// Two clients of different profiles make 10 concurrent calls that each ask for sampling:
// every request is answered by the client whose call made it, or refused with an error
// that says why; none reaches the other client.
func TestConcurrentSamplingNeverMisrouted(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"p1": {}, "p2": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	clients := []*mcp.ClientSession{
		h.client("p1", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-p1")}),
		h.client("p2", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-p2")}),
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, refused := 0, 0
	for i := range 10 {
		cs, own := clients[i%2], fmt.Sprintf("model model-p%d", i%2+1)
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__sample_later", Arguments: map[string]any{"ms": 300}})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			got := resultText(res)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case got == own:
				answered++
			case res.IsError && strings.Contains(got, "cannot tell which client"):
				refused++
			default:
				t.Errorf("call %d of %s: its sampling request got %q, want %q or a refusal", i, own[len("model "):], got, own)
			}
		})
	}
	wg.Wait()
	t.Logf("%d sampling requests answered by their own client, %d refused", answered, refused)
}

// A server's request that comes after the call that caused it ended, while another
// client's call runs on that server, is not given to that other client: a call that
// ended a moment ago may be its cause, so toolshed cannot tell and refuses.
func TestSamplingAfterCallEndsNeverToAnotherSession(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"p1": {}, "p2": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	a := h.client("p1", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	b := h.client("p2", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-b")})
	// a's call ends at once; its server asks for sampling 500 ms later, while b's call
	// (which waits for that request's answer) is the only one running.
	if got := resultText(call(t, a, "alpha__sample_detached", map[string]any{"ms": 500})); got != "asked" {
		t.Fatalf("sample_detached = %q", got)
	}
	got := resultText(call(t, b, "alpha__detached_model", map[string]any{"ms": 5000}))
	if got == "model model-b" {
		t.Fatalf("a's sampling request, sent after a's call ended, was answered by b's client")
	}
	if !strings.Contains(got, "cannot tell which client") {
		t.Errorf("a's sampling request while b's call runs got %q, want a refusal", got)
	}
}

// A server's request about a call whose client has left, sent when the only client
// connected is of another profile, does not reach that client: a used the server within
// the last minute, so the request could be a's.
func TestSamplingAfterCallerLeftNeverToAnotherProfile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"p1": {}, "p2": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	a := h.client("p1", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	asked := make(chan struct{}, 1)
	h.client("p2", &mcp.ClientOptions{CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		select {
		case asked <- struct{}{}:
		default:
		}
		return sampleAs("model-b")(ctx, req)
	}})
	if got := resultText(call(t, a, "alpha__sample_detached", map[string]any{"ms": 1500})); got != "asked" {
		t.Fatalf("sample_detached = %q", got)
	}
	a.Close()
	select {
	case <-asked:
		t.Fatal("the client of profile p2 got the sampling request of a's call (profile p1), sent after a left")
	case <-time.After(4 * time.Second):
	}
}

// The same for a log message: a leaves, and its server's log message about a's call
// comes while b, of another profile, has a call running there.
func TestLogAfterCallerLeftNeverToAnotherProfile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "logs")},
		Profiles: map[string]config.Profile{"a": {}, "b": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	a, _ := loggingClient(t, h, "a", nil)
	b, bLogs := loggingClient(t, h, "b", nil)
	if got := resultText(call(t, a, "alpha__log_later", map[string]any{"text": "a's secret", "ms": 1500})); got != "will log" {
		t.Fatalf("log_later = %q", got)
	}
	a.Close()
	call(t, b, "alpha__slow", map[string]any{"steps": 60})
	if bLogs.has("a's secret") {
		t.Fatalf("b (profile b) got the log message of a's call (profile a): %q", bLogs.all())
	}
	if !strings.Contains(h.log.String(), "a's secret") {
		t.Errorf("a's log message is not in toolshed's log either:\n%s", h.log.String())
	}
}
