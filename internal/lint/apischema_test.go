package lint

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// What the Anthropic API refuses in an input schema, as BFCL's servers write them and
// as Claude Code reports them ("Skipping tool ...: its input schema would be rejected by
// the Anthropic API (schema/properties/x/type must be equal to one of the allowed
// values)"; "property key "año_vehiculo" does not match /^[a-zA-Z0-9_.-]{1,64}$/").
// On BFCL, lint finds exactly the 222 tools Claude Code 2.1.332 leaves out.
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
