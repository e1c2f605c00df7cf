package lint

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/toolshed/toolshed/catalog"
)

// jsonTypes are the values JSON Schema allows for "type".
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// apiPropertyKey is what the Anthropic Messages API accepts as a property name in a
// tool's input schema (its error quotes it: property key "año" does not match
// /^[a-zA-Z0-9_.-]{1,64}$/).
var apiPropertyKey = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// apiSchemaProblem says what in t's input schema the Anthropic API refuses, or "": a
// "type" that is no JSON Schema type (Python's float, dict or tuple, as some servers
// write), or a property name outside ^[a-zA-Z0-9_.-]{1,64}$. Such a tool fails a
// request to the API that carries it, so Claude Code leaves it out ("Skipping tool
// ...: its input schema would be rejected by the Anthropic API"): its users never see
// it, whatever the search.
func apiSchemaProblem(t *catalog.Tool) string {
	var schema any
	if json.Unmarshal(t.InputSchema, &schema) != nil {
		return "" // the schema check says what is wrong with it
	}
	return walkSchema(schema, "schema")
}

func walkSchema(v any, at string) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	switch ty := obj["type"].(type) {
	case string:
		if !slices.Contains(jsonTypes, ty) {
			return fmt.Sprintf("%s/type is %q, which is no JSON Schema type", at, ty)
		}
	case []any:
		for _, e := range ty {
			if s, ok := e.(string); !ok || !slices.Contains(jsonTypes, s) {
				return fmt.Sprintf("%s/type has %v, which is no JSON Schema type", at, e)
			}
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if !apiPropertyKey.MatchString(k) {
				return fmt.Sprintf("%s/properties has the name %q, outside ^[a-zA-Z0-9_.-]{1,64}$", at, k)
			}
			if p := walkSchema(props[k], at+"/properties/"+k); p != "" {
				return p
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if p := walkSchema(obj[key], at+"/"+key); p != "" {
			return p
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		list, _ := obj[key].([]any)
		for i, e := range list {
			if p := walkSchema(e, fmt.Sprintf("%s/%s/%d", at, key, i)); p != "" {
				return p
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := obj[key].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(defs)) {
			if p := walkSchema(defs[k], at+"/"+key+"/"+k); p != "" {
				return p
			}
		}
	}
	return ""
}

// apiSchemaFix says how to mend what apiSchemaProblem found.
func apiSchemaFix(problem string) string {
	if strings.Contains(problem, "/properties has the name") {
		return "rename the parameter with letters, digits, '_', '.' and '-' only (at most 64), in the server or with a toolshed override"
	}
	return "write the type as JSON Schema does: number for float, object for dict, array for tuple or list, and leave type out for any"
}
