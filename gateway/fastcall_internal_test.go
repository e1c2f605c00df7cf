package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	if got.GetProgressToken() != want.GetProgressToken() || len(got.Meta) != len(want.Meta) {
		t.Errorf("fastParams(%s) = _meta %v; the SDK reads %v", params, got.Meta, want.Meta)
	}
}

func TestFastParamsLikeSDK(t *testing.T) {
	for _, c := range fastParamsCases {
		checkFastParams(t, []byte(c))
	}
	for c, want := range map[string]bool{
		`{"name":"a__b","arguments":{"x":1}}`: true, `{"_meta":{"other":1},"name":"x"}`: false,
		`{"name":"x","arguments":null}`: false, `{"Name":"x"}`: false, `{"name":"x","requestState":"s"}`: false,
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
