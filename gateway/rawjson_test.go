package gateway

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestListedDefinition(t *testing.T) {
	for _, tc := range []struct {
		name, raw, listed string
		meta              []member
		want              string
	}{
		{"only the name changes",
			`{"name":"echo","description":"Echo \u00e9","inputSchema":{"type":"object","properties":{"n":{"type":"number","default":12345678901234567890}}},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"optional"},"x-unknown":[1.0,{"b":1,"a":2}]}`,
			"srv__echo", nil,
			`{"name":"srv__echo","description":"Echo \u00e9","inputSchema":{"type":"object","properties":{"n":{"type":"number","default":12345678901234567890}}},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"optional"},"x-unknown":[1.0,{"b":1,"a":2}]}`},
		{"name not first, spaces kept",
			`{ "description" : "d", "name" : "a" , "inputSchema" : {"type": "object"} }`,
			"s__a", nil,
			`{ "description" : "d", "name" : "s__a" , "inputSchema" : {"type": "object"} }`},
		{"schema without type",
			`{"name":"a","inputSchema":{"properties":{}}}`, "a", nil,
			`{"name":"a","inputSchema":{"type":"object","properties":{}}}`},
		{"empty schema",
			`{"name":"a","inputSchema":{ }}`, "a", nil,
			`{"name":"a","inputSchema":{"type":"object"}}`},
		{"no schema",
			`{"name":"a","description":"d"}`, "a", nil,
			`{"name":"a","description":"d","inputSchema":{"type":"object"}}`},
		{"output schema without type",
			`{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"properties":{"x":{}}}}`, "a", nil,
			`{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":{}}}}`},
		{"meta added to the server's",
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"k":1}}`, "a",
			[]member{{Key: "anthropic/alwaysLoad", Value: json.RawMessage("true")}},
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"k":1,"anthropic/alwaysLoad":true}}`},
		{"meta replaces the same key",
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"anthropic/alwaysLoad":false,"k":1}}`, "a",
			[]member{{Key: "anthropic/alwaysLoad", Value: json.RawMessage("true")}},
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"anthropic/alwaysLoad":true,"k":1}}`},
		{"meta created",
			`{"name":"a","inputSchema":{"type":"object"}}`, "a",
			[]member{{Key: "anthropic/alwaysLoad", Value: json.RawMessage("true")}},
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"anthropic/alwaysLoad":true}}`},
		{"null meta replaced",
			`{"name":"a","inputSchema":{"type":"object"},"_meta":null}`, "a",
			[]member{{Key: "x", Value: json.RawMessage(`"y"`)}},
			`{"name":"a","inputSchema":{"type":"object"},"_meta":{"x":"y"}}`},
		{"name with characters to escape",
			`{"name":"a","inputSchema":{"type":"object"}}`, `a"b`, nil,
			`{"name":"a\"b","inputSchema":{"type":"object"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := listedDefinition(json.RawMessage(tc.raw), tc.listed, tc.meta...)
			if string(got) != tc.want {
				t.Errorf("listedDefinition =\n%s\nwant\n%s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func FuzzListedDefinition(f *testing.F) {
	f.Add(`{"name":"a","inputSchema":{"properties":{}},"_meta":{"k":[1,2]}}`, "s__a")
	f.Add(`{"name":"a"}`, "b")
	f.Add(`{ "name" : "a" , "x" : "}" }`, "\u2028")
	f.Fuzz(func(t *testing.T, raw, name string) {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &obj) != nil || !utf8.ValidString(name) {
			return // names come from decoded JSON strings: always valid UTF-8
		}
		got := listedDefinition(json.RawMessage(raw), name, member{Key: "m", Value: json.RawMessage("true")})
		var out map[string]json.RawMessage
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("listedDefinition(%s) = %s: %v", raw, got, err)
		}
		var listed string
		if json.Unmarshal(out["name"], &listed) != nil || listed != name {
			t.Errorf("name = %s, want %q", out["name"], name)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(out["_meta"], &meta) != nil || string(meta["m"]) != "true" {
			t.Errorf("_meta = %s", out["_meta"])
		}
		for k, v := range obj {
			switch k {
			case "name", "inputSchema", "outputSchema", "_meta":
			default:
				if string(out[k]) != string(v) {
					t.Errorf("member %q = %s, want it unchanged: %s", k, out[k], v)
				}
			}
		}
	})
}
