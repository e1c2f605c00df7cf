package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
)

// fullVerdict is the full validator's answer alone, the reference the quick check must
// never contradict; ok is false when the schema does not compile.
func fullVerdict(t testing.TB, schema, args []byte) (valid, ok bool) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return false, false
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if c.AddResource(schemaBase, doc) != nil {
		return false, false
	}
	sch, err := c.Compile(schemaBase)
	if err != nil {
		return false, false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return false, false
	}
	return sch.Validate(inst) == nil, true
}

func TestQuickCheck(t *testing.T) {
	const (
		github = `{"type":"object","properties":{"owner":{"type":"string","description":"Owner"},"repo":{"type":"string"},"perPage":{"type":"number","minimum":1,"maximum":100},"state":{"type":"string","enum":["open","closed"]},"labels":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["owner","repo"],"$schema":"http://json-schema.org/draft-07/schema#"}`
		strict = `{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},"s":{"type":"string","minLength":2,"maxLength":3},"x":{"type":["string","null"]}},"additionalProperties":false}`
		extra  = `{"type":"object","properties":{"a":true},"additionalProperties":{"type":"boolean"}}`
	)
	tests := []struct {
		name, schema, args string
		quick              bool // the quick check proves the arguments valid
	}{
		{"all given", github, `{"owner":"o","repo":"r","perPage":30,"state":"open","labels":["a","b"]}`, true},
		{"required only", github, `{"repo":"r","owner":"o"}`, true},
		{"unknown member allowed", github, `{"owner":"o","repo":"r","other":{"deep":[1,{"x":null}]}}`, true},
		{"spaces", github, "{ \"owner\" : \"o\" ,\n\t\"repo\" : \"r\" }", true},
		{"escaped string without constraints", github, `{"owner":"o\"\u00e9","repo":"r"}`, true},
		{"missing required", github, `{"owner":"o"}`, false},
		{"wrong type", github, `{"owner":1,"repo":"r"}`, false},
		{"below minimum", github, `{"owner":"o","repo":"r","perPage":0}`, false},
		{"above maximum", github, `{"owner":"o","repo":"r","perPage":101}`, false},
		{"fraction within bounds is left to the validator", github, `{"owner":"o","repo":"r","perPage":2.5}`, false},
		{"not in enum", github, `{"owner":"o","repo":"r","state":"merged"}`, false},
		{"escaped enum value is left to the validator", github, `{"owner":"o","repo":"r","state":"\u006fpen"}`, false},
		{"too many items", github, `{"owner":"o","repo":"r","labels":["a","b","c","d"]}`, false},
		{"item of the wrong type", github, `{"owner":"o","repo":"r","labels":["a",2]}`, false},
		{"duplicate key", github, `{"owner":"o","repo":"r","owner":"p"}`, false},
		{"integer", strict, `{"n":1,"s":"ab","x":null}`, true},
		{"exclusive minimum", strict, `{"n":0}`, false},
		{"integer written with a fraction is left to the validator", strict, `{"n":1.0}`, false},
		{"code points, not bytes", strict, `{"s":"éé"}`, true},
		{"too long", strict, `{"s":"abcd"}`, false},
		{"too short", strict, `{"s":"a"}`, false},
		{"no additional properties", strict, `{"y":1}`, false},
		{"additional properties schema", extra, `{"a":[1],"b":true}`, true},
		{"additional property of the wrong type", extra, `{"b":1}`, false},
		{"enum written with spaces", `{"properties":{"e":{"enum":[ "x" , "y" ]}},"required":[ "e" ]}`, `{"e":"y"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := compileQuick([]byte(tt.schema))
			if q == nil {
				t.Fatalf("compileQuick(%s) = nil, want a quick form", tt.schema)
			}
			if got := q.valid([]byte(tt.args)); got != tt.quick {
				t.Errorf("quick check of %s = %v, want %v", tt.args, got, tt.quick)
			}
			valid, ok := fullVerdict(t, []byte(tt.schema), []byte(tt.args))
			if !ok {
				t.Fatal("the full validator cannot compile the schema")
			}
			if tt.quick && !valid {
				t.Errorf("the quick check proves %s valid, the full validator does not", tt.args)
			}
		})
	}
}

// TestQuickLeavesUnknownSchemas checks that a schema with any keyword (or form of one) the
// quick check does not know gets no quick form, so the full validator checks its calls.
func TestQuickLeavesUnknownSchemas(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}`,
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":0.5}}}`,
		`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":true,"minimum":0}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"enum":["x",1]}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
		`{"type":"thing"}`,
		// encoding/json leaves a Go string as it is for a JSON null, so an enum holding
		// null would read as one holding "", and a null subschema as an empty one.
		`{"type":"object","properties":{"a":{"enum":["x",null]}}}`,
		`{"type":"object","properties":{"a":{"enum":null}}}`,
		`{"type":"object","properties":{"a":null}}`,
		`{"type":"object","properties":null}`,
		`{"type":"object","required":null}`,
		`{"type":"object","required":["a",null]}`,
		`{"type":"object","additionalProperties":null}`,
		`{"type":"array","items":null}`,
		`{"type":null}`,
		`null`,
	} {
		if q := compileQuick([]byte(schema)); q != nil {
			t.Errorf("compileQuick(%s) has a quick form, want none", schema)
		}
	}
}

// TestValidateArgumentsQuickRegressions holds arguments a quick check once proved valid
// although the full validator rejects them: ValidateArguments must reject them.
func TestValidateArgumentsQuickRegressions(t *testing.T) {
	for _, tt := range []struct{ schema, args string }{
		{`{"type":"object","properties":{"a":{"enum":["x",null]}}}`, `{"a":""}`},
		{`{"type":"object","properties":{"a":{"type":"string","enum":[ null ]}}}`, `{"a":""}`},
	} {
		tool := &catalog.Tool{Qualified: "t__t", InputSchema: json.RawMessage(tt.schema)}
		if err := SchemaProblem(tool); err != nil {
			t.Fatalf("schema %s: %v", tt.schema, err)
		}
		if err := ValidateArguments(tool, json.RawMessage(tt.args)); !errors.Is(err, ErrArguments) {
			t.Errorf("ValidateArguments(%s, %s) = %v, want an error wrapping ErrArguments", tt.schema, tt.args, err)
		}
	}
}

// TestQuickCoversTheBuiltinCatalog checks that the quick check serves most real tools:
// it exists for their speed.
func TestQuickCoversTheBuiltinCatalog(t *testing.T) {
	snap, _ := builtin.Snapshot()
	quick := 0
	for _, tool := range snap.Tools() {
		if schemaOf(tool).quick != nil {
			quick++
		}
	}
	if quick*2 < len(snap.Tools()) {
		t.Errorf("%d of %d built-in tools have a quick schema, want at least half", quick, len(snap.Tools()))
	}
	t.Logf("%d of %d built-in tools have a quick schema", quick, len(snap.Tools()))
}

// FuzzQuickAgreesWithValidator checks the quick check's one promise: whatever the schema
// and the arguments, it never calls valid what the full validator rejects.
func FuzzQuickAgreesWithValidator(f *testing.F) {
	snap, _ := builtin.Snapshot()
	for i, tool := range snap.Tools() {
		if i%8 == 0 {
			f.Add([]byte(tool.InputSchema), []byte(`{"owner":"o","repo":"r","query":"q","path":"/tmp","perPage":5}`))
		}
	}
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":["integer","null"],"maximum":3},"s":{"enum":["a","b"]}},"required":["n"]}`), []byte(`{"n":3,"s":"a"}`))
	f.Add([]byte(`{"properties":{"a":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"b":{"minLength":1}}},"minItems":1}}}`), []byte(`{"a":[{"b":"x"}]}`))
	bounds := []byte(`{"properties":{"n":{"exclusiveMinimum":0,"exclusiveMaximum":9,"minimum":-3,"maximum":8},"s":{"minLength":1,"maxLength":2}}}`)
	f.Add([]byte(`{"properties":{"a":{"enum":["x",null]}}}`), []byte(`{"a":""}`))
	for _, args := range []string{`{"n":1}`, `{"n":0}`, `{"n":8}`, `{"n":9}`, `{"s":""}`, `{"s":"abc"}`, `{"s":"é"}`} {
		f.Add(bounds, []byte(args))
	}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		args = bytes.TrimSpace(args)
		if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
			return
		}
		q := compileQuick(schema)
		if q == nil || !q.valid(args) {
			return
		}
		if valid, ok := fullVerdict(t, schema, args); ok && !valid {
			t.Errorf("quick check proves %s valid against %s; the full validator rejects it", args, schema)
		}
	})
}

func BenchmarkValidateArguments(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner"},"repo":{"type":"string","description":"Repository name"},"title":{"type":"string"},"body":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"perPage":{"type":"number","minimum":1,"maximum":100}},"required":["owner","repo","title"]}`)
	args := json.RawMessage(`{"owner":"octocat","repo":"hello-world","title":"Found a bug","body":"It fails when the input is empty.","labels":["bug"],"perPage":30}`)
	for _, mode := range []string{"quick", "full"} {
		b.Run(mode, func(b *testing.B) {
			tool := &catalog.Tool{Qualified: "github__create_issue", InputSchema: schema}
			if mode == "full" {
				// Another schema of the same meaning, so that it is compiled on its own and
				// its quick form can be removed.
				tool.InputSchema = append(json.RawMessage(` `), schema...)
				cs := compileSchema(tool.InputSchema)
				cs.quick = nil
				compiled.add(schemaKey(tool.InputSchema), schemaCharge(tool.InputSchema), cs)
			} else if schemaOf(tool).quick == nil {
				b.Fatal("no quick form")
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := ValidateArguments(tool, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
