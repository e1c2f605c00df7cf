package override_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/override"
)

// Whatever a server sends, Apply never breaks a definition: without show it is the
// same bytes, with show still valid JSON holding the shown description.
func FuzzApply(f *testing.F) {
	f.Add(`{"name": "a", "description": "d", "inputSchema": {"type": "object"}}`, "new <b>&</b>", true)
	f.Add(`{"name":"a","name":"b"}`, "x", false)
	f.Add(`{ "name" : "a" , "x" : "}" }`, "\u2028", true)
	f.Add(`[1]`, "x", true)
	f.Fuzz(func(t *testing.T, raw, desc string, show bool) {
		rules := []override.Rule{{Tools: []string{"s__*"}, Description: desc, Show: show}}
		if rules[0].Check() != nil || !utf8.ValidString(desc) { // config text is UTF-8
			return
		}
		res := override.Apply(rules, []catalog.Source{{Server: "s", Tools: []json.RawMessage{json.RawMessage(raw)}}})
		if len(res.Sources) != 1 || len(res.Sources[0].Tools) != 1 {
			t.Fatalf("Apply lost the tool: %+v", res)
		}
		got := res.Sources[0].Tools[0]
		if !show || res.Selected[0] == 0 {
			if !bytes.Equal(got, []byte(raw)) {
				t.Fatalf("definition changed without show:\n%s\n%s", raw, got)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Fatalf("shown definition is not JSON: %v\n%s", err, got)
		}
		if d, _ := obj["description"].(string); d != desc {
			t.Errorf("description %q, want %q", d, desc)
		}
	})
}
