package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

var fastParamsCases = []string{
	`{"name":"a__b","arguments":{"x":1}}`,
	`{"name":"a__b"}`,
	`{"_meta":{"progressToken":"t"},"name":"a\u005fb","arguments":{}}`,
	`{"_meta":{"progressToken":12},"name":"x","arguments":{"y":[1,2]}}`,
	`{"_meta":{"progressToken":1e3},"name":"x"}`,
	`{"_meta":{"other":1},"name":"x"}`,
	`{"_meta":{},"name":"x"}`,
	`{"name":"x","name":"y"}`,
	`{"_meta":{"progressToken":"a"},"_meta":{},"name":"x"}`,
	`{"name":"x","arguments":null}`,
	`{"name":"x","arguments":"{}"}`,
	`{"Name":"x"}`,
	`{"name":""}`,
	`{"name":1}`,
	`{"name":"x","requestState":"s"}`,
	`[1]`,
	// Requests of MCP 2026-07-28: the envelope, trace context, a retry.
	`{"name":"x","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":"00-1-2-01","progressToken":7}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"requestState":"s\u0031","inputResponses":{"ok":{"action":"accept","content":{"yes":true}},"llm":{"role":"assistant","model":"m","content":{"type":"text","text":"Paris"}}}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"requestState":1}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"inputResponses":{"ok":5}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"task":{}}`,
}

// checkFastParams checks that what fastParams reads from params is what the SDK's
// decoding of tools/call params gives (encoding/json into mcp.CallToolParamsRaw).
func checkFastParams(t *testing.T, params []byte) {
	t.Helper()
	got, ok := fastParams(params)
	if !ok {
		return // left to the SDK
	}
	var want mcp.CallToolParamsRaw
	if err := json.Unmarshal(params, &want); err != nil {
		t.Fatalf("fastParams read %s, which the SDK cannot: %v", params, err)
	}
	if got.Name != want.Name || !bytes.Equal(got.Arguments, want.Arguments) {
		t.Errorf("fastParams(%s) = name %q arguments %s; the SDK reads %q %s", params, got.Name, got.Arguments, want.Name, want.Arguments)
	}
	if !reflect.DeepEqual(decodedMeta(t, got.Meta), want.Meta) || got.GetProgressToken() != want.GetProgressToken() {
		t.Errorf("fastParams(%s) = _meta %v; the SDK reads %v", params, got.Meta, want.Meta)
	}
	if got.RequestState != want.RequestState || !reflect.DeepEqual(got.InputResponses, want.InputResponses) {
		t.Errorf("fastParams(%s) = requestState %q inputResponses %v; the SDK reads %q %v", params, got.RequestState, got.InputResponses, want.RequestState, want.InputResponses)
	}
}

// decodedMeta is m with the values fastMeta keeps as JSON (the envelope's objects)
// decoded, as the SDK decodes them into a _meta.
func decodedMeta(t *testing.T, m mcp.Meta) mcp.Meta {
	t.Helper()
	if m == nil {
		return nil
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		if raw, ok := v.(json.RawMessage); ok {
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("_meta %q: %s: %v", k, raw, err)
			}
		}
		out[k] = v
	}
	return out
}

func TestFastParamsLikeSDK(t *testing.T) {
	for _, c := range fastParamsCases {
		checkFastParams(t, []byte(c))
	}
	for c, want := range map[string]bool{
		`{"name":"a__b","arguments":{"x":1}}`: true, `{"_meta":{"other":1},"name":"x"}`: false,
		`{"name":"x","arguments":null}`: false, `{"Name":"x"}`: false, `{"name":"x","requestState":"s"}`: false,
		fastParamsCases[16]: true, fastParamsCases[17]: true, // modern, a retry
		fastParamsCases[18]: false, fastParamsCases[19]: false, fastParamsCases[20]: false, // a log level, an old version, a key twice
		fastParamsCases[21]: false, fastParamsCases[22]: false, fastParamsCases[23]: false, // a bad requestState, inputResponses, a member it does not read
	} {
		if _, ok := fastParams([]byte(c)); ok != want {
			t.Errorf("fastParams(%s) takes it: %t, want %t", c, ok, want)
		}
	}
}

func FuzzFastParams(f *testing.F) {
	for _, c := range fastParamsCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if !json.Valid([]byte(params)) {
			return // the message's line is checked first (decodeMessages)
		}
		checkFastParams(t, []byte(params))
	})
}

// encodeResponse writes what jsonrpc.EncodeMessage writes, for the ids and compact
// results the fast path answers with.
func FuzzEncodeResponse(f *testing.F) {
	f.Add(int64(1), "x", `{"content":[]}`)
	f.Add(int64(-7), "<&>\u2028\"", `{"a":"<&>","b":[1.5e300,null]}`)
	f.Fuzz(func(t *testing.T, n int64, s, result string) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(result)) != nil {
			return
		}
		for _, v := range []any{n, s} {
			id, err := jsonrpc.MakeID(v)
			if _, isInt := v.(int64); isInt {
				id, err = jsonrpc.MakeID(float64(n))
				if float64(int64(float64(n))) != float64(n) {
					continue
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			resp := &jsonrpc.Response{ID: id, Result: buf.Bytes()}
			got, err := encodeResponse(resp)
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeResponse = %s, jsonrpc.EncodeMessage = %s", got, want)
			}
		}
	})
}

// The caller the fast path reads once for a modern call (modernCaller) is the one
// callerOf reads from the request through the SDK, the session's client info included
// where the envelope names none; an envelope the SDK cannot decode is left to it.
func TestModernCallerLikeCallerOf(t *testing.T) {
	_, st := mcp.NewInMemoryTransports()
	first := &mcp.InitializeParams{ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "first", Version: "1"}, Capabilities: &mcp.ClientCapabilities{}}
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), st, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{InitializeParams: first}})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	const v = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	for params, decodes := range map[string]bool{
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"2"}}}`: true,
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{}}}`:                                                                                                       true,
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"Sampling":{},"elicitation":{"URL":{}}},"io.modelcontextprotocol/clientInfo":{"Name":"c","version":"2"}}}`: true,
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `}}}}`:                     false, // deeper than the SDK reads: it refuses it
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":` + strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300) + `}}}}`:                       true,
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"elicitation":5}}}`:                                                                                        false,
		`{"name":"x","_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":5}}}`:                                                       false,
	} {
		p, ok := fastParams([]byte(params))
		if !ok {
			t.Fatalf("fastParams(%s) leaves it to the SDK", params)
		}
		got, ok := modernCaller(ss, p)
		if ok != decodes {
			t.Errorf("modernCaller(%s): %t, want %t", params, ok, decodes)
			continue
		}
		if want := callerOf(&mcp.CallToolRequest{Session: ss, Params: p}); ok && !reflect.DeepEqual(got, want) {
			t.Errorf("modernCaller(%s) = %+v, callerOf reads %+v", params, got, want)
		}
	}
}

// modernForwardedBefore is how modernForwarded wrote a result before it wrote it in
// one buffer: each member set in turn (setMembers), then compacted.
func modernForwardedBefore(raw json.RawMessage, info json.RawMessage) []byte {
	out := []byte(raw)
	if memberValue(out, "resultType") == nil {
		out = setMembers(out, member{Key: "resultType", Value: completeType})
	}
	out = withMeta(out, member{Key: mcp.MetaKeyServerInfo, Value: info})
	var buf bytes.Buffer
	if json.Compact(&buf, out) != nil {
		return nil
	}
	return buf.Bytes()
}

// FuzzModernForwarded checks that the result a modern caller gets from the fast path
// is byte for byte what setting its members one by one gives.
func FuzzModernForwarded(f *testing.F) {
	for _, c := range []string{`{"content":[{"type":"text","text":"hi"}]}`, `{}`, ` { } `, `{"content":[],"resultType":"task"}`,
		`{"_meta":null,"content":[]}`, `{"_meta":{"a":1},"isError":true}`, `{"_meta":"x"}`, `{"a":1,"_meta":{},"_meta":{"b":2}}`,
		"{\n  \"content\" : [ ],\n  \"structuredContent\": {\"k\": [1, 2]}\n}\n", `{"resultType":null}`} {
		f.Add(c)
	}
	impl := &mcp.Implementation{Name: "toolshed", Version: "1"}
	info, _ := serverInfoOf(impl).(json.RawMessage)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || raw[jsonscan.SkipSpace([]byte(raw), 0)] != '{' {
			return // an upstream's result is a valid object (decodeMessages, the SDK)
		}
		want := modernForwardedBefore(json.RawMessage(raw), info)
		got, ok := modernForwarded(json.RawMessage(raw), impl)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("modernForwarded(%s) = %s, %t; want %s", raw, got, ok, want)
		}
	})
}
