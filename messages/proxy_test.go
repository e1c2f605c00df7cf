package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/messages"
)

// exchange records the bodies of one HTTP exchange.
type exchange struct {
	path     string
	request  []byte
	response []byte
	status   int
}

// recorder wraps a handler and records its exchanges.
type recorder struct {
	next     http.Handler
	mu       sync.Mutex
	log      []exchange
	inFlight sync.WaitGroup
}

// exchanges waits for the exchanges under way and returns them all. The proxy may
// answer its client before an upstream handler has returned, so tests read the log
// through this.
func (rec *recorder) exchanges() []exchange {
	rec.inFlight.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]exchange(nil), rec.log...)
}

type teeWriter struct {
	http.ResponseWriter
	buf    bytes.Buffer
	status int
}

func (w *teeWriter) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }
func (w *teeWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.inFlight.Add(1)
	defer rec.inFlight.Done()
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	// The slot is taken when the request arrives, so the log is in request order.
	rec.mu.Lock()
	slot := len(rec.log)
	rec.log = append(rec.log, exchange{path: r.URL.Path, request: body})
	rec.mu.Unlock()
	tw := &teeWriter{ResponseWriter: w, status: 200}
	rec.next.ServeHTTP(tw, r)
	rec.mu.Lock()
	rec.log[slot].response, rec.log[slot].status = tw.buf.Bytes(), tw.status
	rec.mu.Unlock()
}

// model is a scripted model, either wire format.
type model interface {
	http.Handler
	Requests() []fakellm.Request
	Bodies() []map[string]any
	Usage() (in, out int)
}

// harness is a proxy in front of a scripted model, with the real Anthropic SDK as its
// client.
type harness struct {
	model    model
	upstream *recorder
	front    *recorder
	proxy    *messages.Proxy
	client   anthropic.Client
}

// newHarness puts the proxy in front of a model scripted with replies that speaks the
// Anthropic wire format.
func newHarness(t *testing.T, replies ...fakellm.Reply) *harness {
	return newHarnessFor(t, "anthropic", replies...)
}

// newHarnessFor puts the proxy in front of a scripted model that speaks kind's wire
// format: "anthropic" (Messages API) or "openai" (Chat Completions).
func newHarnessFor(t *testing.T, kind string, replies ...fakellm.Reply) *harness {
	t.Helper()
	h := &harness{}
	var upstream messages.Upstream
	if kind == "openai" {
		h.model = fakellm.NewOpenAI(replies...)
	} else {
		h.model = fakellm.NewAnthropic(replies...)
	}
	h.upstream = &recorder{next: h.model}
	up := httptest.NewServer(h.upstream)
	t.Cleanup(up.Close)
	if kind == "openai" {
		upstream = &messages.OpenAI{BaseURL: up.URL + "/v1", APIKey: "upstream-key"}
	} else {
		upstream = &messages.Anthropic{BaseURL: up.URL, APIKey: "upstream-key"}
	}
	n := 0
	var mu sync.Mutex
	h.proxy = &messages.Proxy{
		Upstream: upstream,
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%02d", n)
		},
	}
	h.front = &recorder{next: h.proxy.Handler()}
	front := httptest.NewServer(h.front)
	t.Cleanup(front.Close)
	h.client = anthropic.NewClient(option.WithBaseURL(front.URL), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	return h
}

// send makes a request through the SDK, streamed or not, and returns the message as
// the SDK decoded it.
func (h *harness) send(t *testing.T, stream bool, params anthropic.MessageNewParams, opts ...option.RequestOption) (*anthropic.Message, error) {
	t.Helper()
	ctx := context.Background()
	if !stream {
		return h.client.Messages.New(ctx, params, opts...)
	}
	s := h.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("the SDK cannot accumulate the proxy's stream: %v", err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}

// catalogTools are the deferred tools of the tests.
var catalogTools = []struct{ name, desc, props string }{
	{"get_weather", "Get the current weather for a city", `{"city":{"type":"string","description":"City name"}}`},
	{"get_forecast", "Get the weather forecast for the next days", `{"city":{"type":"string"},"days":{"type":"integer"}}`},
	{"search_flights", "Search flights between two airports", `{"from":{"type":"string"},"to":{"type":"string"}}`},
	{"create_issue", "Create a GitHub issue in a repository", `{"repo":{"type":"string"},"title":{"type":"string"}}`},
	{"send_email", "Send an email message", `{"to":{"type":"string"},"body":{"type":"string"}}`},
}

// tools is a request's tools: the search tool of kind ("regex" or "bm25"), a calculator
// that is not deferred, and the catalog, deferred.
func tools(kind string) []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	if kind == "regex" {
		out = append(out, anthropic.ToolUnionParam{OfToolSearchToolRegex20251119: &anthropic.ToolSearchToolRegex20251119Param{Type: "tool_search_tool_regex_20251119"}})
	} else {
		out = append(out, anthropic.ToolUnionParam{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{Type: "tool_search_tool_bm25_20251119"}})
	}
	out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: "calculator", Description: anthropic.String("Evaluate an arithmetic expression"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"expression": map[string]any{"type": "string"}}},
	}})
	for _, c := range catalogTools {
		var props map[string]any
		json.Unmarshal([]byte(c.props), &props)
		out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: c.name, Description: anthropic.String(c.desc),
			InputSchema:  anthropic.ToolInputSchemaParam{Properties: props},
			DeferLoading: anthropic.Bool(true),
		}})
	}
	return out
}

func params(kind string, msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 1024, Tools: tools(kind), Messages: msgs}
}

func ask(text string) anthropic.MessageParam {
	return anthropic.NewUserMessage(anthropic.NewTextBlock(text))
}

// toolReferenceResult is a user turn answering a client-side search with tool_reference
// blocks.
func toolReferenceResult(id string, names ...string) anthropic.MessageParam {
	var content []anthropic.ToolResultBlockParamContentUnion
	for _, n := range names {
		content = append(content, anthropic.ToolResultBlockParamContentUnion{OfToolReference: &anthropic.ToolReferenceBlockParam{ToolName: n}})
	}
	return anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: id, Content: content}})
}

// shape describes a response's content: "text", "server_tool_use(bm25 {...})",
// "result(get_weather,get_forecast)", "result!invalid_tool_input", "tool_use(name)".
func shape(t *testing.T, msg *anthropic.Message) []string {
	t.Helper()
	var out []string
	for i, b := range msg.Content {
		switch v := b.AsAny().(type) {
		case anthropic.TextBlock:
			out = append(out, "text")
		case anthropic.ServerToolUseBlock:
			if !v.JSON.ID.Valid() || !v.JSON.Input.Valid() || !v.JSON.Caller.Valid() || !strings.HasPrefix(v.ID, "srvtoolu_") {
				t.Errorf("content[%d]: server_tool_use lacks id, input or caller, or its id is not srvtoolu_: %s", i, v.RawJSON())
			}
			in, _ := json.Marshal(v.Input)
			out = append(out, fmt.Sprintf("server_tool_use(%s %s)", v.Name, in))
		case anthropic.ToolSearchToolResultBlock:
			if i == 0 || msg.Content[i-1].ID != v.ToolUseID {
				t.Errorf("content[%d]: tool_search_tool_result %q does not follow its server_tool_use", i, v.ToolUseID)
			}
			switch c := v.Content; c.Type {
			case "tool_search_tool_search_result":
				if !c.JSON.ToolReferences.Valid() {
					t.Errorf("content[%d]: no tool_references: %s", i, v.RawJSON())
				}
				var names []string
				for _, r := range c.AsResponseToolSearchToolSearchResultBlock().ToolReferences {
					names = append(names, r.ToolName)
				}
				out = append(out, "result("+strings.Join(names, ",")+")")
			case "tool_search_tool_result_error":
				e := c.AsResponseToolSearchToolResultError()
				if e.ErrorMessage == "" {
					t.Errorf("content[%d]: error without a message", i)
				}
				out = append(out, "result!"+string(e.ErrorCode))
			default:
				t.Errorf("content[%d]: tool_search_tool_result content of type %q", i, c.Type)
			}
		case anthropic.ToolUseBlock:
			out = append(out, "tool_use("+v.Name+")")
		default:
			t.Errorf("content[%d]: unexpected block %s", i, b.RawJSON())
		}
	}
	return out
}

// upstreamTools lists, for each upstream call, the tools the model saw.
func upstreamTools(h *harness) [][]string {
	var out [][]string
	for _, b := range h.model.Bodies() {
		var names []string
		for _, t := range b["tools"].([]any) {
			tool := t.(map[string]any)
			if f, ok := tool["function"].(map[string]any); ok { // Chat Completions
				tool = f
			}
			names = append(names, tool["name"].(string))
		}
		out = append(out, names)
	}
	return out
}

func TestScenarios(t *testing.T) {
	searchCall := func(id, kind, input string) fakellm.Reply {
		return fakellm.Call("Let me find a tool.", id, "tool_search_tool_"+kind, input)
	}
	firstTurn := []string{"tool_search_tool_bm25", "calculator"}
	cases := []struct {
		name    string
		kind    string
		history []anthropic.MessageParam
		replies []fakellm.Reply
		shape   []string
		stop    string
		// seen lists the tools the model saw on each call.
		seen     [][]string
		searches int64
	}{{
		name:    "search-then-call",
		kind:    "bm25",
		history: []anthropic.MessageParam{ask("What's the weather in Paris?")},
		replies: []fakellm.Reply{
			searchCall("toolu_1", "bm25", `{"query":"current weather city","limit":2}`),
			fakellm.Call("", "toolu_2", "get_weather", `{"city":"Paris"}`),
		},
		shape:    []string{"text", `server_tool_use(tool_search_tool_bm25 {"limit":2,"query":"current weather city"})`, "result(get_weather,get_forecast)", "tool_use(get_weather)"},
		stop:     "tool_use",
		seen:     [][]string{firstTurn, {"tool_search_tool_bm25", "calculator", "get_weather", "get_forecast"}},
		searches: 1,
	}, {
		name:    "two-searches",
		kind:    "regex",
		history: []anthropic.MessageParam{ask("Book a flight to Rome and tell my boss by email.")},
		replies: []fakellm.Reply{
			searchCall("toolu_1", "regex", `{"pattern":"flight"}`),
			searchCall("toolu_2", "regex", `{"pattern":"e-?mail"}`),
			fakellm.Call("", "toolu_3", "search_flights", `{"from":"PAR","to":"FCO"}`),
		},
		shape: []string{"text", `server_tool_use(tool_search_tool_regex {"pattern":"flight"})`, "result(search_flights)",
			"text", `server_tool_use(tool_search_tool_regex {"pattern":"e-?mail"})`, "result(send_email)", "tool_use(search_flights)"},
		stop: "tool_use",
		seen: [][]string{{"tool_search_tool_regex", "calculator"}, {"tool_search_tool_regex", "calculator", "search_flights"},
			{"tool_search_tool_regex", "calculator", "search_flights", "send_email"}},
		searches: 2,
	}, {
		name:    "no-match",
		kind:    "bm25",
		history: []anthropic.MessageParam{ask("Order a pizza.")},
		replies: []fakellm.Reply{
			searchCall("toolu_1", "bm25", `{"query":"pizza delivery order"}`),
			fakellm.Say("I have no tool to order pizza."),
		},
		shape:    []string{"text", `server_tool_use(tool_search_tool_bm25 {"query":"pizza delivery order"})`, "result()", "text"},
		stop:     "end_turn",
		seen:     [][]string{firstTurn, firstTurn},
		searches: 1,
	}, {
		name:    "bad-regex",
		kind:    "regex",
		history: []anthropic.MessageParam{ask("What's the weather?")},
		replies: []fakellm.Reply{
			searchCall("toolu_1", "regex", `{"pattern":"(weather"}`),
			searchCall("toolu_2", "regex", `{"pattern":"weather"}`),
			fakellm.Call("", "toolu_3", "get_weather", `{"city":"Oslo"}`),
		},
		shape: []string{"text", `server_tool_use(tool_search_tool_regex {"pattern":"(weather"})`, "result!invalid_tool_input",
			"text", `server_tool_use(tool_search_tool_regex {"pattern":"weather"})`, "result(get_weather,get_forecast)", "tool_use(get_weather)"},
		stop:     "tool_use",
		seen:     [][]string{{"tool_search_tool_regex", "calculator"}, {"tool_search_tool_regex", "calculator"}, {"tool_search_tool_regex", "calculator", "get_weather", "get_forecast"}},
		searches: 2,
	}, {
		// The model names a deferred tool it never loaded: toolshed loads it as an
		// exact-name search would, and asks again, so the call it returns was made
		// with the tool's schema in view.
		name:    "deferred-call-without-search",
		kind:    "regex",
		history: []anthropic.MessageParam{ask("Weather in Lima?")},
		replies: []fakellm.Reply{
			fakellm.Call("", "toolu_1", "get_weather", `{"location":"Lima"}`),
			fakellm.Call("", "toolu_2", "get_weather", `{"city":"Lima"}`),
		},
		shape:    []string{`server_tool_use(tool_search_tool_regex {"pattern":"^get_weather$"})`, "result(get_weather)", "tool_use(get_weather)"},
		stop:     "tool_use",
		seen:     [][]string{{"tool_search_tool_regex", "calculator"}, {"tool_search_tool_regex", "calculator", "get_weather"}},
		searches: 1,
	}, {
		// The client ran get_weather and sends the result back, with the whole turn
		// as the proxy returned it: the tool stays loaded without a new search.
		name: "tool-results-sent-back",
		kind: "bm25",
		history: []anthropic.MessageParam{
			ask("What's the weather in Paris?"),
			anthropic.NewAssistantMessage(
				anthropic.NewTextBlock("Let me find a tool."),
				anthropic.ContentBlockParamUnion{OfServerToolUse: &anthropic.ServerToolUseBlockParam{ID: "srvtoolu_01", Name: "tool_search_tool_bm25", Input: map[string]any{"query": "weather"}}},
				anthropic.ContentBlockParamUnion{OfToolSearchToolResult: &anthropic.ToolSearchToolResultBlockParam{ToolUseID: "srvtoolu_01",
					Content: anthropic.ToolSearchToolResultBlockParamContentUnion{OfRequestToolSearchToolSearchResultBlock: &anthropic.ToolSearchToolSearchResultBlockParam{
						ToolReferences: []anthropic.ToolReferenceBlockParam{{ToolName: "get_weather"}}}}}},
				anthropic.NewToolUseBlock("toolu_2", map[string]any{"city": "Paris"}, "get_weather"),
			),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_2", "18°C, clear", false)),
		},
		replies:  []fakellm.Reply{fakellm.Say("It is 18°C and clear in Paris.")},
		shape:    []string{"text"},
		stop:     "end_turn",
		seen:     [][]string{{"tool_search_tool_bm25", "calculator", "get_weather"}},
		searches: 0,
	}, {
		// A conversation from a client-side search (tool_reference blocks in a
		// tool_result) is resumed: the referenced tools are loaded again.
		name: "resumed-from-client-side-search",
		kind: "regex",
		history: []anthropic.MessageParam{
			ask("Open an issue about the crash."),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_9", map[string]any{"query": "issue"}, "calculator")),
			toolReferenceResult("toolu_9", "create_issue"),
		},
		replies:  []fakellm.Reply{fakellm.Call("", "toolu_3", "create_issue", `{"repo":"acme/app","title":"Crash"}`)},
		shape:    []string{"tool_use(create_issue)"},
		stop:     "tool_use",
		seen:     [][]string{{"tool_search_tool_regex", "calculator", "create_issue"}},
		searches: 0,
	}}
	for _, c := range cases {
		eachUpstream(t, c.name, func(t *testing.T, kind string, stream bool, name string) {
			h := newHarnessFor(t, kind, c.replies...)
			msg, err := h.send(t, stream, params(c.kind, c.history...))
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(t, msg); !equal(got, c.shape) {
				t.Errorf("content:\n got %q\nwant %q", got, c.shape)
			}
			if string(msg.StopReason) != c.stop {
				t.Errorf("stop_reason %q, want %q", msg.StopReason, c.stop)
			}
			if got := upstreamTools(h); fmt.Sprint(got) != fmt.Sprint(c.seen) {
				t.Errorf("tools the model saw:\n got %v\nwant %v", got, c.seen)
			}
			if err := checkToolPairs(h.model.Bodies()); err != nil {
				t.Error(err)
			}
			// Usage is the sum over the upstream calls.
			in, out := h.model.Usage()
			if msg.Usage.InputTokens != int64(in) || msg.Usage.OutputTokens != int64(out) {
				t.Errorf("usage in %d out %d, want the sums %d and %d", msg.Usage.InputTokens, msg.Usage.OutputTokens, in, out)
			}
			// The SDK has no field for tool_search_requests; it keeps it as an extra.
			if got := searchRequests(msg); got != c.searches {
				t.Errorf("usage.server_tool_use.tool_search_requests %d, want %d", got, c.searches)
			}
			checkExchange(t, name, h)
		})
	}
}

// eachUpstream runs f as subtests for each upstream wire format, streamed and not,
// named NAME, NAME-stream, NAME-openai and NAME-openai-stream, as their golden files.
func eachUpstream(t *testing.T, name string, f func(t *testing.T, kind string, stream bool, name string)) {
	for _, kind := range []string{"anthropic", "openai"} {
		for _, stream := range []bool{false, true} {
			n := name
			if kind == "openai" {
				n += "-openai"
			}
			if stream {
				n += "-stream"
			}
			t.Run(n, func(t *testing.T) { f(t, kind, stream, n) })
		}
	}
}

// searchRequests reads usage.server_tool_use.tool_search_requests.
func searchRequests(msg *anthropic.Message) int64 {
	f, ok := msg.Usage.ServerToolUse.JSON.ExtraFields["tool_search_requests"]
	if !ok {
		return 0
	}
	var n int64
	json.Unmarshal([]byte(f.Raw()), &n)
	return n
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) && len(a) == len(b) }

// checkExchange compares the full exchange, client and upstream, with
// testdata/golden/NAME.txt.
func checkExchange(t *testing.T, name string, h *harness) {
	t.Helper()
	var b strings.Builder
	section := func(title string, body []byte) {
		fmt.Fprintf(&b, "==== %s\n", title)
		var pretty bytes.Buffer
		if json.Indent(&pretty, body, "", "  ") == nil {
			body = pretty.Bytes()
		}
		b.Write(bytes.TrimSpace(body))
		b.WriteString("\n")
	}
	for _, ex := range h.front.exchanges() {
		section("client → toolshed "+ex.path, ex.request)
		for i, up := range h.upstream.exchanges() {
			section(fmt.Sprintf("toolshed → model, call %d", i+1), up.request)
			section(fmt.Sprintf("model → toolshed, call %d (%d)", i+1, up.status), up.response)
		}
		section(fmt.Sprintf("toolshed → client (%d)", ex.status), ex.response)
	}
	golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(b.String()))
}

// TestPauseTurn checks that a model that keeps searching is stopped with pause_turn,
// and that sending the response back continues the turn.
func TestPauseTurn(t *testing.T) {
	var replies []fakellm.Reply
	for i := range 3 {
		replies = append(replies, fakellm.Call("", fmt.Sprintf("toolu_%d", i), "tool_search_tool_bm25", `{"query":"weather"}`))
	}
	replies = append(replies, fakellm.Say("Done."))
	for _, stream := range []bool{false, true} {
		h := newHarness(t, replies...)
		h.proxy.MaxIterations = 2
		msg, err := h.send(t, stream, params("bm25", ask("hi")))
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != "pause_turn" || len(msg.Content) != 4 {
			t.Fatalf("stream=%v: stop %q with %d blocks, want pause_turn after 2 searches", stream, msg.StopReason, len(msg.Content))
		}
		msg2, err := h.send(t, stream, params("bm25", ask("hi"), msg.ToParam()))
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(t, msg2); !equal(got, []string{`server_tool_use(tool_search_tool_bm25 {"query":"weather"})`, "result(get_weather,get_forecast)", "text"}) {
			t.Errorf("stream=%v: continuation %q", stream, got)
		}
		// The continuation's first call saw the history as one assistant turn that
		// goes on after the two search results.
		bodies := h.model.Bodies()
		last := bodies[2]["messages"].([]any)
		if n := len(last); n != 5 {
			t.Errorf("stream=%v: the continued conversation has %d messages, want 5 (user, assistant, user, assistant, user)", stream, n)
		}
	}
}
