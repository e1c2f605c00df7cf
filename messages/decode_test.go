package messages

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest checks the proxy's request decoder against json.Unmarshal: the same
// bodies are accepted, with the same members, and nothing panics, neither decoding nor
// validating and rendering what was decoded, and the upstream's request is valid JSON. A second decode of the same body goes through the cached
// tools.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"},{"name":"a","input_schema":{"type":"object"},"defer_loading":true}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"x","input":{}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"tool_references":[{"tool_name":"a"}]}}]}],"tools":[]}`,
		`{"tools":[1,2],"model":3}`, `{"model":"m",}`, `[]`, `{"a":1} x`, `{"tools":[{"name":"a"} {"name":"b"}]}`,
		`{"max_tokens":1e3,"stream":true,"metadata":{"user_id":"u"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &Proxy{}
		got, err := p.decodeRequest(b)
		var want Request
		werr := json.Unmarshal(b, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("decodeRequest error %v, json.Unmarshal error %v, for %q", err, werr, b)
		}
		if err != nil {
			return
		}
		if got.Model != want.Model || got.MaxTokens != want.MaxTokens || got.Stream != want.Stream ||
			len(got.Messages) != len(want.Messages) || len(got.Tools) != len(want.Tools) || len(got.Extra) != len(want.Extra) {
			t.Fatalf("decodeRequest and json.Unmarshal differ for %q:\n%+v\n%+v", b, got, want)
		}
		if pr, aerr := p.prepare(got); aerr == nil {
			out, err := pr.render(got.Messages, pr.loadedTools(got.Messages)).MarshalJSON()
			if err != nil || !json.Valid(out) {
				t.Fatalf("the upstream request for %q is not valid JSON (%v): %s", b, err, out)
			}
			again, err := p.decodeRequest(b)
			if err != nil || len(again.Tools) != len(got.Tools) {
				t.Fatalf("a second decode of %q failed: %v", b, err)
			}
		}
	})
}
