package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// paramsMetaCases are request params whose _meta paramsMeta must read as encoding/json
// reads it: the ordinary case, and every one the scan leaves to the full decode.
var paramsMetaCases = []string{
	`{"name":"x","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"k":1},"name":"x"}`,
	`{"_meta":{"k":1},"_meta":{"j":2}}`,
	`{"_META":{"k":1}}`,
	`{"_Meta":{"k":1},"_meta":{"j":2}}`,
	`{"_meta":{"j":2},"_mEta":{"k":1}}`,
	`{"\u005fmeta":{"k":1}}`,
	`{"_meta":null}`,
	`{"_meta":5}`,
	`{"_meta":[1]}`,
	`{"_meta":{}}`,
	`{"_meta":{"k":1,"k":2}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/clientCapabilities":null}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_META":{"io.modelcontextprotocol/clientInfo":{"name":"c"}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo" : { "name" : "c" } , "io.modelcontextprotocol/Protocolversion":"x"}}`,
	`{}`,
	` { "_meta" : { "k" : [ 1 , 2 ] } } `,
	`[1]`,
	`"s"`,
	`null`,
	`12`,
	`{"arguments":{"_meta":{"k":1}}}`,
}

// fullMeta is how classifyRequest read _meta before paramsMeta: params decoded whole.
func fullMeta(params []byte) (map[string]json.RawMessage, bool) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, false
	}
	return p.Meta, true
}

func checkParamsMeta(t *testing.T, params []byte) {
	t.Helper()
	if !json.Valid(params) {
		return // the connection decoded the message: params are valid JSON
	}
	full, wantOK := fullMeta(params)
	want := metaEnvelope{version: full[mcp.MetaKeyProtocolVersion], caps: full[mcp.MetaKeyClientCapabilities], info: full[mcp.MetaKeyClientInfo]}
	got, gotOK := paramsMeta(params)
	if gotOK != wantOK || !reflect.DeepEqual(got, want) {
		t.Errorf("paramsMeta(%s) = %v, %v; encoding/json reads %v, %v", params, got, gotOK, want, wantOK)
	}
}

func TestParamsMetaLikeDecode(t *testing.T) {
	for _, c := range paramsMetaCases {
		checkParamsMeta(t, []byte(c))
	}
}

func FuzzParamsMeta(f *testing.F) {
	for _, c := range paramsMetaCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, params []byte) { checkParamsMeta(t, params) })
}

// TestHeaderBindingsFollowDefinition checks that the Mcp-Param-* bindings a modern
// POST is checked against are those of the tool as it is listed now: read once per
// definition, read again when the definition is replaced, gone with the tool.
func TestHeaderBindingsFollowDefinition(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	var l listedTools
	list := func(header string) {
		t.Helper()
		schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"` + header + `"}}}`
		def := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(schema)}
		if err := l.add(s, def, []byte(`{"name":"t","inputSchema":`+schema+`}`), h); err != nil {
			t.Fatal(err)
		}
	}
	req := &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"t","arguments":{"region":"eu"}}`)}
	headers := func(param string) http.Header {
		return http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"t"}, "Mcp-Param-" + param: {"eu"}}
	}
	check := func(param, wantErr string) {
		t.Helper()
		for range 2 { // the first call reads the schema, the second the cached bindings
			err := headerMismatch(headers(param), req, l.headerBindingsOf)
			if (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("headers with Mcp-Param-%s: %v, want %q", param, err, wantErr)
			}
		}
	}

	list("Region")
	check("Region", "")
	check("Zone", "missing Mcp-Param-Region header")

	list("Zone") // the definition replaced: its bindings, not the cached ones
	check("Zone", "")
	check("Region", "missing Mcp-Param-Zone header")

	l.remove(s, "t")
	if b, known := l.headerBindingsOf("t"); known || b != nil {
		t.Fatalf("a removed tool has bindings %v (known %v)", b, known)
	}
	check("Region", "") // an unknown tool's call is refused later, as any unknown tool's
}

// TestServerInfoOfEncodesImpl checks that the serverInfo a modern result carries is
// the implementation's own encoding, cached per implementation.
func TestServerInfoOfEncodesImpl(t *testing.T) {
	a := &mcp.Implementation{Name: "toolshed", Title: "toolshed MCP gateway", Version: "1.2.3"}
	b := &mcp.Implementation{Name: "other", Version: "9"}
	for _, impl := range []*mcp.Implementation{a, b, a, b} {
		want, err := marshal(impl)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := serverInfoOf(impl).(json.RawMessage)
		if !ok || string(got) != string(want) {
			t.Fatalf("serverInfoOf(%+v) = %s, want %s", impl, got, want)
		}
	}
}

// TestHeaderMismatchName checks Mcp-Name against the name in the body as a decoder
// reads it: an escape in the body is decoded before the comparison, so a header that
// copies the escape's text does not match, and one with the decoded name does.
func TestHeaderMismatchName(t *testing.T) {
	for _, tc := range []struct {
		params, header string
		match          bool
	}{
		{`{"name":"alpha__echo"}`, "alpha__echo", true},
		{`{"name":"alpha__echo"}`, "alpha__echO", false},
		{`{"name":"a\u0041"}`, "aA", true},
		{`{"name":"a\u0041"}`, `a\u0041`, false},
		{`{"name":"a\"b"}`, `a"b`, true},
		{`{"name":"a\"b"}`, `a\"b`, false},
		{`{"name":5}`, "5", false},
	} {
		req := &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(tc.params)}
		err := headerMismatch(http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {tc.header}}, req, nil)
		if (err == nil) != tc.match {
			t.Errorf("params %s, Mcp-Name %q: %v, want a match: %t", tc.params, tc.header, err, tc.match)
		}
	}
}
