package lint

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// What the Anthropic API refuses in an input schema, as BFCL's servers write them and
// as Claude Code reports them ("Skipping tool ...: its input schema would be rejected by
// the Anthropic API (schema/properties/x/type must be equal to one of the allowed
// values)"; "property key "año_vehiculo" does not match /^[a-zA-Z0-9_.-]{1,64}$/").
func TestAPISchemaProblem(t *testing.T) {
	for _, tc := range []struct {
		schema, want string
	}{
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer","null"]},"c":{"type":"array","items":{"type":"object","properties":{"d.e":{"type":"number"}}}}}}`, ""},
		{`{"type":"object","properties":{"timeout":{"type":"float"}}}`, `schema/properties/timeout/type is "float"`},
		{`{"type":"object","properties":{"xs":{"type":"array","items":{"type":"dict"}}}}`, `schema/properties/xs/items/type is "dict"`},
		{`{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"tuple"}}}}}`, `schema/properties/p/properties/q/type is "tuple"`},
		{`{"type":"object","properties":{"v":{"type":["string","any"]}}}`, `schema/properties/v/type has any`},
		{`{"type":"object","properties":{"año_vehiculo":{"type":"integer"}}}`, `schema/properties has the name "año_vehiculo"`},
		{`{"type":"object","properties":{"` + strings.Repeat("k", 65) + `":{"type":"integer"}}}`, `outside ^[a-zA-Z0-9_.-]{1,64}$`},
		{`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"long"}]}}}`, `schema/properties/u/anyOf/1/type is "long"`},
		{`{"type":"object","$defs":{"T":{"type":"double"}}}`, `schema/$defs/T/type is "double"`},
		{`not json`, ""},
	} {
		got := apiSchemaProblem(&catalog.Tool{InputSchema: json.RawMessage(tc.schema)})
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.schema, got, tc.want)
		}
	}
}

// On BFCL's 1,287 real tools the check names as many as the real Claude Code 2.1.332
// leaves out of the same catalog: 222, read from its debug log ("Skipping tool ...: its
// input schema would be rejected by the Anthropic API") when bench/claude-code-search
// served it the catalog. Their names matched one for one (lint names a tool by its
// qualified name, Claude Code by its own).
func TestAPISchemaProblemBFCL(t *testing.T) {
	sources, problems := catalog.ReadFile(filepath.Join("..", "..", "bench", "bfcl", "catalog.json"))
	if len(problems) > 0 {
		t.Fatal(problems[0])
	}
	snap, _ := catalog.Build(sources)
	n := 0
	for _, tool := range snap.Tools() {
		if apiSchemaProblem(tool) != "" {
			n++
		}
	}
	if n != 222 {
		t.Errorf("%d of BFCL's %d tools have a schema the Anthropic API refuses; Claude Code 2.1.332 drops 222", n, snap.Len())
	}
}
