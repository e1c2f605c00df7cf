package bridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
)

// TestSchemaProblem checks that a schema toolshed cannot compile is reported with what
// is wrong in it, and that its calls still go through unchecked (see ValidateArguments).
func TestSchemaProblem(t *testing.T) {
	tests := []struct {
		name, schema string
		want         string // in the problem; "" for none
	}{
		{"dangling $ref", `{"type":"object","properties":{"x":{"$ref":"#/$defs/Missing"}}}`, `"#/$defs/Missing" not found`},
		{"dangling definitions $ref", `{"type":"object","definitions":{},"properties":{"x":{"$ref":"#/definitions/Item"}}}`, `"#/definitions/Item" not found`},
		{"external $ref", `{"type":"object","properties":{"x":{"$ref":"other.json"}}}`, `external reference "other.json" not loaded`},
		{"unknown draft", `{"$schema":"https://example.com/my-draft","type":"object"}`, `"https://example.com/my-draft" not loaded`},
		{"resolving $ref", `{"type":"object","$defs":{"A":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/A"}}}`, ""},
		{"no schema", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := &catalog.Tool{Qualified: "s__t", InputSchema: json.RawMessage(tt.schema)}
			err := bridge.SchemaProblem(tool)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("SchemaProblem = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "unchecked") || strings.Contains(err.Error(), "file:///") {
				t.Fatalf("SchemaProblem = %v, want one that says %s and that calls go unchecked", err, tt.want)
			}
			if err := bridge.ValidateArguments(tool, json.RawMessage(`{"x":1}`)); err != nil {
				t.Errorf("ValidateArguments = %v, want the call to go to the server", err)
			}
		})
	}
}
