package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's tests run this test binary as their upstream MCP servers: TestMain turns
// it into a real MCP server (built with the go-sdk, over stdio) when TOOLSHED_TEST_UPSTREAM
// names a behaviour. Alongside, the tests use the real npm servers and the go-sdk's
// conformance server (see internal/testupstream).
const upstreamEnv = "TOOLSHED_TEST_UPSTREAM"

func TestMain(m *testing.M) {
	if mode := os.Getenv(upstreamEnv); mode != "" {
		os.Exit(serveTestUpstream(mode))
	}
	os.Exit(m.Run())
}

// upstreamCommand returns the command and environment that start this binary as a test
// upstream with the given behaviour.
// instructionsEnv, when set, is the instructions the test upstream gives at initialize.
const instructionsEnv = "TOOLSHED_TEST_UPSTREAM_INSTRUCTIONS"

func upstreamCommand(mode string) (string, []string, map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe, []string{"-test.run=^$"}, map[string]string{upstreamEnv: mode}
}

// Behaviours:
//
//	basic    tools echo, add, slow (progress, cancellation), fail (isError), structured,
//	         elicit, sample, sample_later and roots (ask the client through the
//	         gateway), grow (adds a tool and
//	         sends list_changed), args (returns the raw arguments it received), crash
//	         (exits mid-call), hang (never answers)
//	exit     writes to stderr (a URL with a password) and exits at once
//	hang     never answers initialize
//	garbage  writes lines that are not JSON-RPC
//	many:N   N tools named tool_00001...
//	odd      basic, plus a tool without a name, a tool whose schema has a $ref to
//	         nowhere (dangling), and relist (sends list_changed, the list unchanged)
//	features[:ID]  prompts, resources, a resource template, completions and
//	         subscriptions, all marked with ID (see serveFeatures)
//	logs     basic, plus log (sends a log message with the text during the call) and
//	         log_later (answers at once, and sends the log message ms milliseconds later)
//	single   basic, plus wide (a schema the SDK's structs would change), and only one
//	         instance at a time: a second one exits while the file $TOOLSHED_TEST_LOCK
//	         exists, as servers that hold a lock, a port or a database do
//
// basic, many:N, single and odd exit at once while the file $TOOLSHED_TEST_GATE exists: a
// test holds a server down with it (restarting), then lets it come back.
// legacyVersions are the versions the test upstream speaks: those before 2026-07-28, as
// an old server does. It asks the client through requests of its own (sampling,
// elicitation, roots) and logs outside any request, which a 2026-07-28 session has
// no room for; servers of that era are tested in era_test.go. With $TOOLSHED_TEST_BOTH_ERAS
// set, basic speaks every version the SDK does, as a go-sdk v1.8 server does by default.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const bothErasEnv = "TOOLSHED_TEST_BOTH_ERAS"

func serveTestUpstream(mode string) int {
	switch {
	case mode == "features" || strings.HasPrefix(mode, "features:"):
		return serveFeatures(strings.TrimPrefix(strings.TrimPrefix(mode, "features"), ":"))
	case mode == "exit":
		// A server that fails prints what it could not reach, its password with it.
		fmt.Fprintln(os.Stderr, "test upstream: refusing to start (exit mode): cannot connect to postgres://app:s3cret@db/app")
		return 3
	case mode == "hang":
		time.Sleep(time.Hour)
		return 0
	case mode == "garbage":
		for range 50 {
			fmt.Println("this is not JSON-RPC {{{")
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Hour)
		return 0
	}
	if gate := os.Getenv("TOOLSHED_TEST_GATE"); gate != "" {
		if _, err := os.Stat(gate); err == nil {
			fmt.Fprintln(os.Stderr, "test upstream: held down while", gate, "exists")
			return 3
		}
	}
	opts := &mcp.ServerOptions{SupportedProtocolVersions: legacyVersions, Instructions: os.Getenv(instructionsEnv)}
	if os.Getenv(bothErasEnv) != "" {
		opts.SupportedProtocolVersions = nil // the SDK's own: 2026-07-28 too
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1"}, opts)
	if mode == "single" {
		lock := os.Getenv("TOOLSHED_TEST_LOCK")
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test upstream: another instance is running:", err)
			return 3
		}
		f.Close()
		defer os.Remove(lock)
		server.AddTool(&mcp.Tool{Name: "wide", InputSchema: json.RawMessage(wideSchema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("wide"), nil })
	}
	switch {
	case strings.HasPrefix(mode, "many:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(mode, "many:"))
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("tool_%05d", i)
			server.AddTool(&mcp.Tool{Name: name, Description: fmt.Sprintf("Synthetic tool number %d that reports item %d of the inventory.", i, i),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"type":"integer"}}}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(name), nil
				})
		}
	case mode == "odd":
		addBasicTools(server)
		addOddTools(server)
	case mode == "mrtr":
		addBasicTools(server)
		addBadInputTools(server)
	default:
		addBasicTools(server)
	}
	if mode == "logs" {
		addLogTools(server)
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test upstream:", err)
		return 1
	}
	return 0
}

// addOddTools adds the tools of the odd behaviour: two the catalog warns about, and one
// that makes the gateway list the tools again without changing them.
func addOddTools(server *mcp.Server) {
	nothing := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("done"), nil }
	server.AddTool(&mcp.Tool{Name: "", InputSchema: json.RawMessage(`{"type":"object"}`)}, nothing)
	server.AddTool(&mcp.Tool{Name: "dangling", Description: "A schema whose $ref points nowhere.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"$ref":"#/$defs/Item"}}}`)}, nothing)
	relist := &mcp.Tool{Name: "relist", Description: "Send list_changed without changing the list.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	var h mcp.ToolHandler
	h = func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		server.AddTool(relist, h) // the same tool again: the SDK sends list_changed
		return text("relisted"), nil
	}
	server.AddTool(relist, h)
}

// addBadInputTools adds tools that ask for input through MRTR (served at 2026-07-28,
// with bothErasEnv) in ways a gateway must not relay: forever, with a requestState
// over toolshed's bound, and asking nothing (a busy server). Each tool's calls are
// counted in the text of the echo tool "count", by tool name.
func addBadInputTools(server *mcp.Server) {
	var mu sync.Mutex
	calls := map[string]int{}
	ask := mcp.InputRequestMap{"again": &mcp.ElicitParams{Message: "Once more?", RequestedSchema: map[string]any{"type": "object"}}}
	for name, res := range map[string]func(state string) *mcp.CallToolResult{
		"ask_forever": func(state string) *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: ask, RequestState: state + "x"}
		},
		"big_state": func(string) *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: ask, RequestState: strings.Repeat("s", 70000)}
		},
		"busy": func(string) *mcp.CallToolResult { return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}} },
	} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				mu.Lock()
				calls[name]++
				mu.Unlock()
				return res(req.Params.RequestState), nil
			})
	}
	server.AddTool(&mcp.Tool{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			b, _ := json.Marshal(calls)
			return text(string(b)), nil
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func addBasicTools(server *mcp.Server) {
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	server.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the given text back.",
		InputSchema: obj(`{"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}}, "required": ["text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &in)
			return text(in.Text), nil
		})
	server.AddTool(&mcp.Tool{Name: "add", Description: "Add two numbers.",
		InputSchema:  obj(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		OutputSchema: obj(`{"type":"object","properties":{"sum":{"type":"number"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			sum := in.A + in.B
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(sum)}}, StructuredContent: map[string]any{"sum": sum}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "args", Description: "Return the raw arguments as received.", InputSchema: obj(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	server.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails with a tool error.", InputSchema: obj(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed on purpose"}}}, nil
		})
	var cancelled atomic.Int64
	server.AddTool(&mcp.Tool{Name: "slow", Description: "Take steps of 50 ms, reporting progress; stops when cancelled.",
		InputSchema: obj(`{"type":"object","properties":{"steps":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Steps int }
			json.Unmarshal(req.Params.Arguments, &in)
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-ctx.Done():
					cancelled.Add(1)
					return nil, ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
				if tok := req.Params.GetProgressToken(); tok != nil {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
				}
			}
			return text(fmt.Sprintf("done %d steps", in.Steps)), nil
		})
	server.AddTool(&mcp.Tool{Name: "cancelled", Description: "How many slow calls were cancelled.", InputSchema: obj(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strconv.FormatInt(cancelled.Load(), 10)), nil
		})
	server.AddTool(&mcp.Tool{Name: "elicit", Description: "Ask the user for a name through elicitation.", InputSchema: obj(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
			}
			return text(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil
		})
	server.AddTool(&mcp.Tool{Name: "sample", Description: "Ask the client's model for a completion through sampling.", InputSchema: obj(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
			}
			t, _ := res.Content.(*mcp.TextContent)
			return text("model " + res.Model + " said: " + t.Text), nil
		})
	server.AddTool(&mcp.Tool{Name: "sample_later", Description: "Wait ms milliseconds, then ask the client's model for a completion.",
		InputSchema: obj(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ MS int }
			json.Unmarshal(req.Params.Arguments, &in)
			time.Sleep(time.Duration(in.MS) * time.Millisecond)
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
			}
			return text("model " + res.Model), nil
		})
	server.AddTool(&mcp.Tool{Name: "declared", Description: "The capabilities the client of this connection declared.", InputSchema: obj(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.Session.InitializeParams().Capabilities)
			return text(string(b)), nil
		})
	// sample_detached answers at once and asks for sampling right after, so the request
	// races the call's result; detached_model waits for the answer.
	detached := make(chan string, 100)
	server.AddTool(&mcp.Tool{Name: "sample_detached", Description: "Answer at once, then, after ms milliseconds, ask the client's model for a completion.",
		InputSchema: obj(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ MS int }
			json.Unmarshal(req.Params.Arguments, &in)
			go func() {
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
				res, err := req.Session.CreateMessage(context.Background(), &mcp.CreateMessageParams{MaxTokens: 10,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
				if err != nil {
					detached <- "error: " + err.Error()
					return
				}
				detached <- "model " + res.Model
			}()
			return text("asked"), nil
		})
	server.AddTool(&mcp.Tool{Name: "detached_model", Description: "The answer to the oldest sample_detached, waiting at most ms milliseconds.",
		InputSchema: obj(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ MS int }
			json.Unmarshal(req.Params.Arguments, &in)
			select {
			case m := <-detached:
				return text(m), nil
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return text("no answer"), nil
			}
		})
	server.AddTool(&mcp.Tool{Name: "roots", Description: "List the client's roots.", InputSchema: obj(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots/list failed: " + err.Error()}}}, nil
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, ",")), nil
		})
	server.AddTool(&mcp.Tool{Name: "grow", Description: "Add a tool named extra_<n> to this server.", InputSchema: obj(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			json.Unmarshal(req.Params.Arguments, &in)
			name := fmt.Sprintf("extra_%d", in.N)
			server.AddTool(&mcp.Tool{Name: name, Description: "A tool added at run time.", InputSchema: obj(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(name), nil })
			return text("added " + name), nil
		})
	server.AddTool(&mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call.", InputSchema: obj(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "test upstream: crashing on purpose")
			os.Exit(2)
			return nil, nil
		})
	server.AddTool(&mcp.Tool{Name: "hang", Description: "Never answer.", InputSchema: obj(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	server.AddTool(&mcp.Tool{Name: "delete_everything", Description: "A destructive tool, for approval rules.",
		InputSchema: obj(`{"type":"object","properties":{"password":{"type":"string"},"target":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("deleted"), nil
		})
}

func ptr[T any](v T) *T { return &v }

// addLogTools adds the tools of the logs behaviour.
func addLogTools(server *mcp.Server) {
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}},"required":["text"]}`)
	server.AddTool(&mcp.Tool{Name: "log", Description: "Send a log message with the text, then answer.", InputSchema: schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &in)
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "test", Data: in.Text}); err != nil {
				return nil, err
			}
			return text("logged"), nil
		})
	server.AddTool(&mcp.Tool{Name: "log_later", Description: "Answer at once, then, after ms milliseconds, send a log message with the text.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string
				MS   int
			}
			json.Unmarshal(req.Params.Arguments, &in)
			go func() {
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
				req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "test", Data: in.Text})
			}()
			return text("will log"), nil
		})
}

// serveFeatures runs the features behaviour: a server whose prompts, resources and
// answers all carry its id, so that tests can tell which server answered.
//
//	prompts    greet (arguments name, required, and style), shared by every
//	           features server; about_ID, without arguments
//	resources  feat://ID/readme (text), feat://ID/logo (blob), feat://shared/info
//	           (listed by every features server, with the same definition)
//	template   feat://ID/items/{item}
//	complete   greet's name among Ada, Alan, Grace; the template's item among apple,
//	           apricot, banana; each value suffixed with @ID
//	tools      touch (sends notifications/resources/updated for uri), subscriptions
//	           (the URIs subscribed to, comma-separated), add_prompt (adds a prompt
//	           named name), crash (exits mid-call)
func serveFeatures(id string) int {
	if id == "" {
		id = "features"
	}
	var mu sync.Mutex
	subs := map[string]bool{}
	server := mcp.NewServer(&mcp.Implementation{Name: "test-features-" + id, Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: legacyVersions,
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			subs[req.Params.URI] = true
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			delete(subs, req.Params.URI)
			return nil
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			ref, arg := req.Params.Ref, req.Params.Argument
			var candidates []string
			switch {
			case ref.Type == "ref/prompt" && ref.Name == "greet" && arg.Name == "name":
				candidates = []string{"Ada", "Alan", "Grace"}
			case ref.Type == "ref/resource" && ref.URI == "feat://"+id+"/items/{item}" && arg.Name == "item":
				candidates = []string{"apple", "apricot", "banana"}
			default:
				return nil, fmt.Errorf("%s offers no completion for %s %s%s argument %s", id, ref.Type, ref.Name, ref.URI, arg.Name)
			}
			values := []string{}
			for _, c := range candidates {
				if strings.HasPrefix(c, arg.Value) {
					values = append(values, c+"@"+id)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		},
	})
	server.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{
		{Name: "name", Description: "Who to greet", Required: true},
		{Name: "style", Description: "How to greet"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Description: "greeting from " + id, Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s in a %s style (%s)", a["name"], a["style"], id)}},
			{Role: "assistant", Content: &mcp.TextContent{Text: "Hello, " + a["name"] + "!"}},
		}}, nil
	})
	server.AddPrompt(&mcp.Prompt{Name: "about_" + id, Description: "About " + id + "."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "about " + id}}}}, nil
		})
	textResource := func(uri, text string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}
	}
	server.AddResource(&mcp.Resource{URI: "feat://" + id + "/readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textResource(req.Params.URI, "readme of "+id), nil
		})
	server.AddResource(&mcp.Resource{URI: "feat://" + id + "/logo", Name: "logo", MIMEType: "image/png"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: featureBlob(id)}}}, nil
		})
	server.AddResource(&mcp.Resource{URI: "feat://shared/info", Name: "info", Description: "Listed by every features server.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return textResource(req.Params.URI, "shared info from "+id), nil
		})
	server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "feat://" + id + "/items/{item}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			item := strings.TrimPrefix(req.Params.URI, "feat://"+id+"/items/")
			return textResource(req.Params.URI, "item "+item+" of "+id), nil
		})
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	server.AddTool(&mcp.Tool{Name: "touch", Description: "Tell subscribers that a resource changed.",
		InputSchema: obj(`{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ URI string }
			json.Unmarshal(req.Params.Arguments, &in)
			if err := server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
				return nil, err
			}
			return text("touched " + in.URI), nil
		})
	server.AddTool(&mcp.Tool{Name: "subscriptions", Description: "List the subscribed resources.", InputSchema: obj(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			uris := make([]string, 0, len(subs))
			for u := range subs {
				uris = append(uris, u)
			}
			sort.Strings(uris)
			return text(strings.Join(uris, ",")), nil
		})
	server.AddTool(&mcp.Tool{Name: "add_prompt", Description: "Add a prompt at run time.",
		InputSchema: obj(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Name string }
			json.Unmarshal(req.Params.Arguments, &in)
			server.AddPrompt(&mcp.Prompt{Name: in.Name, Description: "Added at run time."},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Name + " of " + id}}}}, nil
				})
			return text("added " + in.Name), nil
		})
	server.AddTool(&mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call.", InputSchema: obj(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "test upstream: crashing on purpose")
			os.Exit(2)
			return nil, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test upstream:", err)
		return 1
	}
	return 0
}

// featureBlob is the content of feat://ID/logo: bytes that are not text.
func featureBlob(id string) []byte {
	return append([]byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe}, id...)
}
