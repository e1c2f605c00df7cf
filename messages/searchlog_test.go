package messages_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/learn"
	"github.com/toolshed/toolshed/searchlog"
)

// TestProxySearchLog checks what the proxy writes to a real search log (SQLite) for a
// conversation in Claude Code's shape: its answer to the client's search, then the call
// of the tool found, recorded once the client's next request carries its result, with
// the rank and query of the search, under the tool's qualified name. The same call id
// from another client is no call of this conversation. A server search tool's search
// is recorded too, streamed or not.
func TestProxySearchLog(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		log, err := searchlog.Open(ctx, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close(ctx)
		h := newHarness(t,
			searchCall(`{"query":"echo the string back"}`),
			fakellm.Call("", "toolu_02", "mcp__everything__echo", `{"message":"hi"}`),
			fakellm.Say("Echoed."), fakellm.Say("Echoed."))
		h.proxy.ClientTools = ccCatalog(t)
		h.proxy.SearchLog = log
		session := option.WithHeader("X-Claude-Code-Session-Id", "session-1")
		send := func(opts []option.RequestOption, msgs ...string) {
			t.Helper()
			_, err := h.send(t, stream, anthropic.MessageNewParams{}, append(opts, option.WithRequestBody("application/json", ccBody(stream, ccTools, msgs...)))...)
			if err != nil {
				t.Fatal(err)
			}
		}
		call := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"ToolSearch","input":{"query":"select:mcp__everything__echo"}}]}`
		found := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"tool_reference","tool_name":"mcp__everything__echo"}]}]}`
		echo := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_02","name":"mcp__everything__echo","input":{"message":"hi"}}]}`
		echoed := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_02","content":"hi"}]}`
		send([]option.RequestOption{session}, ccAsk, ccAnnounce)
		send([]option.RequestOption{session}, ccAsk, ccAnnounce, call, found)
		send([]option.RequestOption{session, option.WithAPIKey("another-client")}, ccAsk, ccAnnounce, call, found, echo, echoed)
		send([]option.RequestOption{session}, ccAsk, ccAnnounce, call, found, echo, echoed)
		if err := log.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		searches, calls, err := log.Read(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(searches) != 1 || searches[0].Source != "proxy" || searches[0].Query != "echo the string back" || searches[0].Mode != "bm25" ||
			len(searches[0].Results) != 1 || searches[0].Results[0].Tool != "everything__echo" {
			t.Fatalf("stream=%v: searches %+v, want the client's search with everything__echo", stream, searches)
		}
		if len(calls) != 1 {
			t.Fatalf("stream=%v: calls %+v, want the one call of this conversation", stream, calls)
		}
		c := calls[0]
		if c.Tool != "everything__echo" || c.Server != "everything" || c.Outcome != searchlog.OutcomeOK || c.Rank != 1 || c.Query != "echo the string back" || c.Session != searches[0].Session {
			t.Errorf("stream=%v: call %+v, want everything__echo, ok, at rank 1 of the search", stream, c)
		}
	}

	// A server search tool's search.
	log, err := searchlog.Open(ctx, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	h := newHarness(t, fakellm.Call("", "toolu_s", "tool_search_tool_bm25", `{"query":"weather"}`), fakellm.Say("Sunny."))
	h.proxy.SearchLog = log
	if _, err := h.send(t, false, params("bm25", ask("weather?"))); err != nil {
		t.Fatal(err)
	}
	log.Flush(ctx)
	searches, _, _ := log.Read(ctx, time.Time{})
	if len(searches) != 1 || searches[0].Query != "weather" || searches[0].Mode != "bm25" || len(searches[0].Results) == 0 {
		t.Errorf("the server search tool's search: %+v", searches)
	}
}

// TestClientSearchLearnsFromLog checks that with a Learner the proxy's answers to
// Claude Code's search learn from the search log: a query that led to successful calls
// of a tool finds it, where without the log nothing is found.
func TestClientSearchLearnsFromLog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, err := searchlog.Open(ctx, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	const query = "zzqx plonk"
	for range 3 {
		log.Call(searchlog.Call{Time: time.Now(), Source: "proxy", Tool: "everything__echo", Server: "everything", Outcome: searchlog.OutcomeOK, Rank: 1, Query: query})
	}
	log.Flush(ctx)
	var replies []fakellm.Reply
	for range 200 {
		replies = append(replies, searchCall(`{"query":"`+query+`","max_results":1}`))
	}
	h := newHarness(t, replies...)
	h.proxy.ClientTools = ccCatalog(t)
	if msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, ccAnnounce)); err != nil || toolUseInput(t, msg) == `{"query":"select:mcp__everything__echo","max_results":1}` {
		t.Fatalf("without learning the proxy already finds echo for %q (%v): the test shows nothing", query, err)
	}
	h.proxy.Learn = learn.New(log, learn.Options{Interval: 20 * time.Millisecond})
	go h.proxy.Learn.Run(ctx)
	for i := range replies {
		msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, ccAnnounce))
		if err != nil {
			t.Fatal(err)
		}
		if toolUseInput(t, msg) == `{"query":"select:mcp__everything__echo","max_results":1}` {
			return
		}
		if i == 0 {
			t.Logf("before learning: %s", toolUseInput(t, msg))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the proxy's answer never learned that %q led to echo", query)
}
