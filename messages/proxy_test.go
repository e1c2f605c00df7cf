package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

func TestValidation(t *testing.T) {
	deferred := func(name string) string {
		return `{"name":"` + name + `","description":"d","input_schema":{"type":"object"},"defer_loading":true}`
	}
	search := `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`
	custom := `{"name":"ToolSearch","description":"Fetches deferred tools","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`
	user := `[{"role":"user","content":"hi"}]`
	var many []string
	for i := range messages.MaxDeferredTools + 1 {
		many = append(many, deferred(fmt.Sprintf("t%d", i)))
	}
	cases := []struct {
		name, tools, messages, want string
	}{
		{"all deferred", deferred("a") + "," + deferred("b"), user, "At least one tool must have defer_loading=false. All tools cannot be deferred."},
		{"unknown reference in tool_result", search + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search_tool_regex","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"nope"}]}]}]`,
			"Tool reference 'nope' not found in available tools"},
		{"unknown reference in search result", search + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"pattern":"x"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"gone"}]}}]}]`,
			"Tool reference 'gone' not found in available tools"},
		{"defer_loading with cache_control", search + `,{"name":"a","input_schema":{"type":"object"},"defer_loading":true,"cache_control":{"type":"ephemeral"}}`, user, "both defer_loading=true and cache_control"},
		{"too many deferred", search + "," + strings.Join(many, ","), user, "10001 tools have defer_loading=true; at most 10000 can be deferred"},
		{"deferred search tool", `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25","defer_loading":true},{"name":"x","input_schema":{"type":"object"}}`, user, "cannot have defer_loading=true"},
		{"no input_schema", search + `,{"name":"a","defer_loading":true}`, user, "tools.1.input_schema: a custom tool needs an input_schema"},
		{"schema not an object", search + `,{"name":"a","input_schema":{"type":"string"}}`, user, `the root type must be "object"`},
		{"bad tool name", search + `,{"name":"get weather","input_schema":{"type":"object"}}`, user, `"get weather" must match`},
		{"duplicate name", search + "," + deferred("a") + "," + deferred("a"), user, `"a" appears more than once`},
		// The same checks when the client searches with a tool of its own.
		{"all deferred, client-side search", deferred("ToolSearch") + "," + deferred("a"), user, "At least one tool must have defer_loading=false. All tools cannot be deferred."},
		{"unknown reference, client-side search", custom + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"nope"},{"type":"text","text":"Tool loaded."}]}]}]`,
			"Tool reference 'nope' not found in available tools"},
		{"defer_loading with cache_control, client-side search", custom + `,{"name":"a","input_schema":{"type":"object"},"defer_loading":true,"cache_control":{"type":"ephemeral"}}`, user, "both defer_loading=true and cache_control"},
		{"too many deferred, client-side search", custom + "," + strings.Join(many, ","), user, "10001 tools have defer_loading=true; at most 10000 can be deferred"},
		{"tool_result for a server tool use", search + "," + deferred("a"),
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"srvtoolu_01","content":"x"}]}]`, "cannot answer the server tool use"},
		{"tools not a list", `"x"`, user, "not a valid Messages API request"},
		{"mcp_toolset", search + `,{"type":"mcp_toolset","mcp_server_name":"github","default_config":{"defer_loading":true}}`, user, "mcp_toolset needs Anthropic's MCP connector"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			body := `{"model":"m","max_tokens":10,"tools":[` + c.tools + `],"messages":` + c.messages + `}`
			for _, stream := range []bool{false, true} {
				b := body
				if stream {
					b = strings.Replace(body, `"max_tokens":10`, `"max_tokens":10,"stream":true`, 1)
				}
				var raw json.RawMessage = []byte(b)
				_, err := h.client.Messages.New(context.Background(), anthropic.MessageNewParams{}, option.WithRequestBody("application/json", []byte(raw)))
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("stream=%v: got %v, want an API error", stream, err)
				}
				if ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || !strings.Contains(ae.Message, c.want) {
					t.Errorf("stream=%v: got %d %s %q, want 400 invalid_request_error containing %q", stream, ae.StatusCode, ae.Type(), ae.Message, c.want)
				}
			}
			if n := len(h.model.Requests()); n != 0 {
				t.Errorf("an invalid request reached the model (%d requests)", n)
			}
		})
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		reply  fakellm.Reply
		status int
		typ    string
	}{
		{"rate limit", fakellm.Fail(429, "rate_limit_error"), 429, "rate_limit_error"},
		{"overloaded", fakellm.Fail(529, "overloaded_error"), 529, "overloaded_error"},
		{"bad key", fakellm.Fail(401, "authentication_error"), 401, "authentication_error"},
		{"server error", fakellm.Fail(500, "api_error"), 500, "api_error"},
	}
	for _, c := range cases {
		for _, kind := range []string{"anthropic", "openai"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s %s stream=%v", c.name, kind, stream), func(t *testing.T) {
					h := newHarnessFor(t, kind, c.reply)
					_, err := h.send(t, stream, params("bm25", ask("hi")))
					var ae *anthropic.Error
					if !errors.As(err, &ae) {
						t.Fatalf("got %v, want an API error", err)
					}
					if ae.StatusCode != c.status || string(ae.Type()) != c.typ {
						t.Errorf("got %d %s, want %d %s", ae.StatusCode, ae.Type(), c.status, c.typ)
					}
				})
			}
		}
	}
	// An error after the search, in the second upstream call, of a stream that has
	// begun: an error event.
	t.Run("mid-stream", func(t *testing.T) {
		h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"weather"}`), fakellm.Fail(529, "overloaded_error"))
		_, err := h.send(t, true, params("bm25", ask("hi")))
		if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
			t.Errorf("got %v, want the overloaded_error event", err)
		}
	})
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run("upstream error event "+kind, func(t *testing.T) {
			h := newHarnessFor(t, kind, fakellm.Reply{Content: []json.RawMessage{fakellm.Text("partial")}, StreamError: "overloaded_error"})
			_, err := h.send(t, true, params("bm25", ask("hi")))
			if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
				t.Errorf("got %v, want the overloaded_error event", err)
			}
			if resp := h.front.exchanges()[0].response; strings.Count(string(resp), "event: error") != 1 {
				t.Errorf("want exactly one error event:\n%s", resp)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: "http://127.0.0.1:1", APIKey: "sk-secret"}}
		srv := httptest.NewServer(p.Handler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 500 || !strings.Contains(string(body), `"type":"api_error"`) || !strings.Contains(string(body), "could not reach the upstream") {
			t.Errorf("got %d %s", resp.StatusCode, body)
		}
		if strings.Contains(string(body), "sk-secret") {
			t.Errorf("the key leaked into the error: %s", body)
		}
	})
}

// TestHeaders checks that the client's anthropic-version and anthropic-beta reach the
// upstream, and its key does not: the upstream gets the proxy's own key.
func TestHeaders(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"))
	_, err := h.client.Messages.New(context.Background(), params("bm25", ask("hi")), option.WithHeader("anthropic-beta", "advanced-tool-use-2025-11-20"), option.WithHeader("anthropic-version", "2023-06-01"))
	if err != nil {
		t.Fatal(err)
	}
	got := h.model.Requests()[0].Header
	if got.Get("anthropic-beta") != "advanced-tool-use-2025-11-20" || got.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("headers not forwarded: beta %q version %q", got.Get("anthropic-beta"), got.Get("anthropic-version"))
	}
	if got.Get("x-api-key") != "upstream-key" {
		t.Errorf("x-api-key %q, want the proxy's upstream key", got.Get("x-api-key"))
	}
	if strings.Contains(fmt.Sprint(got), "client-key") {
		t.Errorf("the client's key reached the upstream: %v", got)
	}
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

// TestSearchBudget checks that searches past MaxSearches answer too_many_requests.
func TestSearchBudget(t *testing.T) {
	h := newHarness(t,
		fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"weather"}`),
		fakellm.Call("", "toolu_2", "tool_search_tool_bm25", `{"query":"email"}`),
		fakellm.Say("ok"))
	h.proxy.MaxSearches = 1
	msg, err := h.send(t, false, params("bm25", ask("hi")))
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); !equal(got, []string{`server_tool_use(tool_search_tool_bm25 {"query":"weather"})`, "result(get_weather,get_forecast)",
		`server_tool_use(tool_search_tool_bm25 {"query":"email"})`, "result!too_many_requests", "text"}) {
		t.Errorf("got %q", got)
	}
}

func TestSearchInputErrors(t *testing.T) {
	cases := []struct{ kind, input, code string }{
		{"regex", `{"pattern":"` + strings.Repeat("a", 201) + `"}`, "invalid_tool_input"},
		{"bm25", `{"query":"` + strings.Repeat("a ", 251) + `"}`, "invalid_tool_input"},
		{"regex", `{"query":"weather"}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":0}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":10001}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":2.5}`, "invalid_tool_input"},
		{"regex", `{"pattern":"(?<=a)b"}`, "invalid_tool_input"},
	}
	for _, c := range cases {
		h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_"+c.kind, c.input), fakellm.Say("ok"))
		msg, err := h.send(t, false, params(c.kind, ask("hi")))
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(t, msg); len(got) != 3 || got[1] != "result!"+c.code {
			t.Errorf("%s %s: got %q, want result!%s", c.kind, c.input, got, c.code)
		}
		// The model was told what went wrong, as an error tool_result.
		msgs := h.model.Bodies()[1]["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
		if last["type"] != "tool_result" || last["is_error"] != true {
			t.Errorf("%s: the model got %v, want an error tool_result", c.input, last)
		}
	}
}

// TestSearchTimeout checks that a regex search past Proxy.RegexBudget answers
// execution_time_exceeded, and the model is told so. The pattern has no literal text to
// narrow the tools down by and matches none, so every field of every tool is tried.
func TestSearchTimeout(t *testing.T) {
	h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_regex", `{"pattern":"(a|b)*[\\x{E000}-\\x{E0FF}]"}`), fakellm.Say("ok"))
	h.proxy.RegexBudget = time.Nanosecond
	tools := tools("regex")
	for i := range 500 {
		tools = append(tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: fmt.Sprintf("tool_%d", i), Description: anthropic.String(strings.Repeat("ab", 200)),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}, DeferLoading: anthropic.Bool(true),
		}})
	}
	msg, err := h.client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Tools: tools, Messages: []anthropic.MessageParam{ask("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); len(got) != 3 || got[1] != "result!execution_time_exceeded" {
		t.Errorf("got %q, want an execution_time_exceeded result", got)
	}
}

func TestCountTokens(t *testing.T) {
	h := newHarness(t)
	n, err := h.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "fake-model", Messages: []anthropic.MessageParam{ask("What's the weather?")},
		Tools: []anthropic.MessageCountTokensToolUnionParam{
			{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{Type: "tool_search_tool_bm25_20251119"}},
			{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}, DeferLoading: anthropic.Bool(true)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := h.model.Requests()[0].Body
	if want := int64(fakellm.InputTokens(body)); n.InputTokens != want || bytes.Contains(body, []byte("get_weather")) {
		t.Errorf("count_tokens %d (want %d) over %s; the deferred tool must not be counted", n.InputTokens, want, body)
	}
}

// TestClientKey checks that a proxy with a ClientKey answers only clients that send it.
func TestClientKey(t *testing.T) {
	h := newHarness(t, fakellm.Say("hi"))
	h.proxy.ClientKey = "client-key"
	srv := httptest.NewServer(h.proxy.Handler())
	defer srv.Close()
	for _, c := range []struct {
		key  string
		want bool
	}{{"client-key", true}, {"wrong", false}, {"", false}} {
		opts := []option.RequestOption{option.WithBaseURL(srv.URL), option.WithMaxRetries(0), option.WithAPIKey(c.key)}
		client := anthropic.NewClient(opts...)
		_, err := client.Messages.New(context.Background(), params("bm25", ask("hi")))
		var ae *anthropic.Error
		switch {
		case c.want && err != nil:
			t.Errorf("key %q: %v", c.key, err)
		case !c.want && (!errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error"):
			t.Errorf("key %q: got %v, want 401 authentication_error", c.key, err)
		}
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1 (only the authenticated one)", n)
	}
}

func TestNotFound(t *testing.T) {
	h := newHarness(t)
	_, err := h.client.Models.List(context.Background(), anthropic.ModelListParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
		t.Errorf("got %v, want 404 not_found_error", err)
	}
}
