//go:build e2e && unix

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The AI SDK's MCP client (@ai-sdk/mcp 2.0.99 beside ai 7.0.173), run by Node 22
// (testdata/aisdk_client.mjs) against toolshed serve as a separate process, over its
// stdio transport (the client spawns toolshed) and its Streamable HTTP transport. The
// tools run as an agent built on the AI SDK runs MCP tools: client.tools(), then
// execute; no model is needed for that.

const aisdkScript = "aisdk_client.mjs"

// aiTool is a tool as the AI SDK hands it to a model.
type aiTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Meta        json.RawMessage `json:"meta,omitempty"`
}

// checkAIConnected checks that the client connected, and closed with no uncaught error.
func checkAIConnected(t *testing.T, ev sdkEvents) {
	t.Helper()
	var conn struct {
		ProtocolVersion string
		ServerInfo      struct{ Name string }
	}
	ev.get(t, "connected", &conn)
	if conn.ServerInfo.Name != "toolshed" || conn.ProtocolVersion == "" {
		t.Errorf("the AI SDK client connected to %q with protocol %q", conn.ServerInfo.Name, conn.ProtocolVersion)
	}
	var closed struct{ Uncaught []string }
	ev.get(t, "closed", &closed)
	for _, e := range closed.Uncaught {
		switch {
		case aiSDKOwnGETError.MatchString(e):
			t.Logf("the AI SDK's own error (it opens its SSE stream before it has a session): %s", e)
		case lateDiscoverAnswer(e):
			t.Logf("the AI SDK's own error (it gave up on its server/discover probe after 1 s, toolshed's answer came later): %s", e)
		case e == "MCPClientError: Unsupported message type":
			// The AI SDK's client accepts no notification from a server (its source says
			// so): a legitimate one (tools/list_changed, progress) is reported this way.
			t.Logf("the AI SDK's own error (it takes no server notifications): %s", e)
		default:
			t.Errorf("the AI SDK client reported an uncaught error: %s", e)
		}
	}
}

// lateDiscoverAnswer reports whether e is what the AI SDK reports when toolshed's answer
// to its server/discover probe comes after the second the client waits for it (the
// process it spawned is still starting on a loaded machine): the client has fallen back
// to initialize by then, and reports the answer, to a request it no longer waits for,
// as a protocol error. Only that answer counts: id 0, toolshed's discover result.
func lateDiscoverAnswer(e string) bool {
	raw, ok := strings.CutPrefix(e, "MCPClientError: Protocol error: Received a response for an unknown message ID: ")
	if !ok {
		return false
	}
	var answer struct {
		ID     *int `json:"id"`
		Result struct {
			SupportedVersions []string                   `json:"supportedVersions"`
			Meta              map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	return json.Unmarshal([]byte(raw), &answer) == nil && answer.ID != nil && *answer.ID == 0 &&
		len(answer.Result.SupportedVersions) > 0 && answer.Result.Meta["io.modelcontextprotocol/serverInfo"] != nil
}

// aiSDKOwnGETError is what the AI SDK's HTTP transport reports when, falling back from
// server/discover to initialize (toolshed offers HTTP clients protocols up to
// 2025-11-25), it opens its GET stream before initialize has given it a session id:
// toolshed answers 400 as the Streamable HTTP transport says a server that requires a
// session does, and the AI SDK's retry then meets the GET stream it opened meanwhile
// (409, the Go SDK serves one per session).
var aiSDKOwnGETError = regexp.MustCompile(`^MCPClientError: MCP HTTP Transport Error: GET SSE failed: (400 Bad Request|409 Conflict)$`)

// TestAISDKTools: tools() gives the bridge (search on) or every upstream tool (search
// off) with its schema; executing tool_search, tool_describe, tool_call and direct
// tools works, with real effects, on the old servers and on a modern-only (MCP
// 2026-07-28) one beside them; the client connects and closes cleanly over stdio and
// HTTP, and no toolshed or upstream process outlives it (stdio) or toolshed (HTTP).
func TestAISDKTools(t *testing.T) {
	sdkModes(t, func(t *testing.T, mode string) {
		sdkTransports(t, func(t *testing.T, transport string) {
			checkAISDKTools(t, startSDKGateway(t, transport, mode, "everything", "memory", "filesystem", "modern"), transport)
		})
	})
}

// TestAISDKSlowServers is TestAISDKTools and TestAISDKFeatures over stdio with tool
// search on, with upstreams that start later than toolshed's first answers wait for
// them (5 s), as on a loaded machine: the client waits for the tools it needs, and the
// tools the AI SDK hands a model are then those toolshed lists.
func TestAISDKSlowServers(t *testing.T) {
	t.Run("tools", func(t *testing.T) {
		checkAISDKTools(t, newSlowSDKGateway(t, "on", 8*time.Second, "everything", "memory", "filesystem"), "stdio")
	})
	t.Run("features", func(t *testing.T) {
		checkAISDKFeatures(t, newSlowSDKGateway(t, "on", 8*time.Second, "everything"), "stdio")
	})
}

// checkAISDKTools runs TestAISDKTools's client on g over transport.
func checkAISDKTools(t *testing.T, g *sdkGateway, transport string) {
	t.Helper()
	mode := g.mode
	args := newToolCallArgs(g, "the AI SDK")
	plan := args.plan("tools")
	modern := slices.Contains(g.names, "modern")
	if modern {
		plan["wanted"] = append(plan["wanted"].([]string), "modern__echo")
		plan["modern"] = true
	}
	ev := g.runClient(aisdkScript, transport, plan)
	checkAIConnected(t, ev)

	var tools, direct struct{ Tools []aiTool }
	var list, directList struct{ Tools []mcpTool }
	ev.get(t, "tools", &tools)
	ev.get(t, "direct_tools", &direct)
	ev.get(t, "list", &list)
	ev.get(t, "direct_list", &directList)
	listed := map[string]mcpTool{}
	for _, x := range list.Tools {
		listed[x.Name] = x
	}
	var names []string
	for _, x := range tools.Tools {
		names = append(names, x.Name)
		// The AI SDK gives the model the listed schema, closed (additionalProperties: false).
		l, ok := listed[x.Name]
		if !ok {
			t.Errorf("tools() has %s, which tools/list does not", x.Name)
			continue
		}
		if x.Description != l.Description || !sameJSON(x.InputSchema, aiSchema(t, l.InputSchema)) || !sameJSON(x.Meta, l.Meta) {
			t.Errorf("tools() gives %s as %s %s _meta %s; tools/list has %s %s _meta %s", x.Name, x.Description, x.InputSchema, x.Meta, l.Description, l.InputSchema, l.Meta)
		}
	}
	slices.Sort(names)
	if mode == "on" {
		if want := []string{"tool_call", "tool_describe", "tool_search"}; !slices.Equal(names, want) {
			t.Errorf("tools() with tool search on = %v, want the bridge %v", names, want)
		}
	} else {
		if len(names) != len(list.Tools) {
			t.Errorf("tools() has %d tools, tools/list %d", len(names), len(list.Tools))
		}
		// server-everything's tools as the AI SDK makes them from the server itself,
		// and no other of its tools.
		for _, x := range tools.Tools {
			if name, ok := strings.CutPrefix(x.Name, "everything__"); ok && findAITool(direct.Tools, name).Name == "" {
				t.Errorf("tools() with tool search off has %s, which server-everything does not list to a client with this client's capabilities", x.Name)
			}
		}
		for _, d := range direct.Tools {
			x := findAITool(tools.Tools, "everything__"+d.Name)
			if x.Name == "" {
				t.Errorf("tools() with tool search off lacks everything__%s", d.Name)
				continue
			}
			if x.Title != d.Title || x.Description != d.Description || !sameJSON(x.InputSchema, d.InputSchema) {
				t.Errorf("tools() gives everything__%s as\n%+v\nthe server itself as\n%+v", d.Name, x, d)
			}
		}
	}
	if mode == "on" {
		var search, describe struct{ Result mcpResult }
		ev.get(t, "search", &search)
		ev.get(t, "describe", &describe)
		var found struct{ Matches []struct{ Name string } }
		if err := json.Unmarshal([]byte(search.Result.text()), &found); err != nil || len(found.Matches) == 0 || found.Matches[0].Name != "everything__echo" {
			t.Errorf("tool_search(echo back the input message) = %s, want everything__echo first", search.Result.text())
		}
		var desc mcpTool
		json.Unmarshal([]byte(describe.Result.text()), &desc)
		echo := findTool(directList.Tools, "echo")
		if desc.Name != "everything__echo" || echo.Name == "" || !sameJSON(desc.InputSchema, echo.InputSchema) {
			t.Errorf("tool_describe(everything__echo) = %s %s, the server lists %s", desc.Name, desc.InputSchema, echo.InputSchema)
		}
	}
	checkEffects(t, g, ev, args)
	if modern {
		// The modern-only server (MCP 2026-07-28) answers beside the old ones.
		var res struct{ Result mcpResult }
		ev.get(t, "modern", &res)
		if want := []map[string]any{{"type": "text", "text": args.message}}; res.Result.IsError || !reflect.DeepEqual(res.Result.Content, want) {
			t.Errorf("modern__echo through toolshed = %+v, want content %v", res.Result, want)
		}
	}
}

func findAITool(tools []aiTool, name string) aiTool {
	for _, x := range tools {
		if x.Name == name {
			return x
		}
	}
	return aiTool{}
}

// aiSchema is an input schema as the AI SDK's tools() passes it to a model: with
// properties (empty if absent) and additionalProperties: false.
func aiSchema(t *testing.T, schema json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		t.Fatalf("input schema %s: %v", schema, err)
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	m["additionalProperties"] = false
	b, _ := json.Marshal(m)
	return b
}

// TestAISDKCancel: an agent aborts a running tool through its abortSignal; the client
// gets the abort, and toolshed goes on serving. The AI SDK sends nothing when a call is
// aborted (it has no notifications/cancelled, and over Streamable HTTP a dropped
// request is not a cancellation), so the upstream call goes on. Over HTTP the client
// ends its session when it closes (DELETE): toolshed then cancels the session's calls
// upstream, and the close does not wait for them. Over stdio the client stops toolshed,
// and with it the upstream.
func TestAISDKCancel(t *testing.T) {
	sdkModes(t, func(t *testing.T, mode string) {
		sdkTransports(t, func(t *testing.T, transport string) {
			g := startSDKGateway(t, transport, mode, "everything", "recorder")
			ev := g.runClient(aisdkScript, transport, map[string]any{"scenario": "cancel"})
			checkAIConnected(t, ev)
			var c struct{ Error *string }
			ev.get(t, "cancelled", &c)
			if c.Error == nil || !strings.Contains(*c.Error, "aborted") {
				t.Errorf("the aborted tool ended with %v, want the AI SDK's abort error", c.Error)
			}
			var after struct{ Ping, Echo mcpResult }
			ev.get(t, "after", &after)
			if after.Ping.IsError || after.Ping.text() != "pong" {
				t.Errorf("the call after the abort = %+v, want pong", after.Ping)
			}
			if after.Echo.IsError || after.Echo.text() != "Echo: still serving" {
				t.Errorf("echo after the abort = %+v", after.Echo)
			}
			if transport == "http" {
				checkUpstreamCancelled(t, g)
				return
			}
			// The client stopped toolshed (SIGTERM) with the call still running upstream:
			// toolshed ended it on its way out rather than waiting for it.
			_, events := waitRecorder(t, g.recorderLog, func(_ []recorderMessage, events []string) bool {
				return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "block ended") })
			})
			if !slices.Contains(events, "block ended: context canceled") {
				t.Errorf("the upstream call was not cancelled when the client stopped toolshed; the recorder saw %q", events)
			}
		})
	})
}

// TestAISDKFeatures: resources (list, templates, read text and blob) and prompts (list,
// get with arguments) through toolshed with the AI SDK's client.
func TestAISDKFeatures(t *testing.T) {
	sdkTransports(t, func(t *testing.T, transport string) {
		checkAISDKFeatures(t, startSDKGateway(t, transport, "on", "everything"), transport)
	})
}

// checkAISDKFeatures runs TestAISDKFeatures's client on g over transport.
func checkAISDKFeatures(t *testing.T, g *sdkGateway, transport string) {
	t.Helper()
	plan := map[string]any{
		"scenario":   "features",
		"textURI":    "demo://resource/dynamic/text/3",
		"blobURI":    "demo://resource/dynamic/blob/4",
		"promptArgs": map[string]string{"city": "Busan"},
	}
	ev := g.runClient(aisdkScript, transport, plan)
	checkAIConnected(t, ev)

	var resources struct{ Resources []struct{ URI string } }
	var templates struct {
		ResourceTemplates []struct{ URITemplate string }
	}
	ev.get(t, "resources", &resources)
	ev.get(t, "templates", &templates)
	if len(resources.Resources) == 0 || !strings.HasPrefix(resources.Resources[0].URI, "demo://resource/static/document/") {
		t.Errorf("resources/list = %+v, want server-everything's documents", resources.Resources)
	}
	var uriTemplates []string
	for _, x := range templates.ResourceTemplates {
		uriTemplates = append(uriTemplates, x.URITemplate)
	}
	slices.Sort(uriTemplates)
	if want := []string{"demo://resource/dynamic/blob/{resourceId}", "demo://resource/dynamic/text/{resourceId}"}; !slices.Equal(uriTemplates, want) {
		t.Errorf("resources/templates/list = %v, want %v", uriTemplates, want)
	}
	type contents struct {
		Contents []struct{ URI, Text, Blob string }
	}
	var text, blob contents
	ev.get(t, "read_text", &text)
	ev.get(t, "read_blob", &blob)
	if len(text.Contents) != 1 || !strings.HasPrefix(text.Contents[0].Text, "Resource 3: This is a plaintext resource created at") {
		t.Errorf("resources/read %s = %+v", plan["textURI"], text.Contents)
	}
	if len(blob.Contents) != 1 {
		t.Errorf("resources/read %s = %+v, want one blob", plan["blobURI"], blob.Contents)
	} else if data, err := base64.StdEncoding.DecodeString(blob.Contents[0].Blob); err != nil || !strings.HasPrefix(string(data), "Resource 4: This is a base64 blob created at") {
		t.Errorf("resources/read %s: blob %q decodes to %q (%v)", plan["blobURI"], blob.Contents[0].Blob, data, err)
	}

	var prompts struct{ Prompts []struct{ Name string } }
	ev.get(t, "prompts", &prompts)
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "everything__args-prompt") || !slices.Contains(names, "everything__simple-prompt") {
		t.Errorf("prompts/list = %v, want server-everything's prompts under qualified names", names)
	}
	var prompt struct {
		Messages []struct{ Content struct{ Text string } }
	}
	ev.get(t, "prompt", &prompt)
	if len(prompt.Messages) != 1 || prompt.Messages[0].Content.Text != "What's weather in Busan?" {
		t.Errorf("prompts/get everything__args-prompt = %+v, want \"What's weather in Busan?\"", prompt.Messages)
	}
}
