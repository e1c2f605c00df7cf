package bridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/catalog"
)

// ErrArguments is wrapped by argument errors: arguments that are not a JSON object, or
// that violate the tool's input schema.
var ErrArguments = errors.New("invalid arguments")

// compiledSchema is a compiled input schema, or why it cannot be compiled.
type compiledSchema struct {
	sch   *jsonschema.Schema
	quick *quickSchema // nil unless sch is set and the schema has a quick form
	err   error
}

// noLoader refuses every reference outside the schema: a tool's schema must not make
// toolshed read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q not loaded: tool schemas must be self-contained", url)
}

// schemaBase is the URL a schema is compiled under: one with a path, so that relative
// references resolve to other documents, which noLoader refuses, rather than back to
// this one.
const (
	schemaDir  = "file:///toolshed/tool/"
	schemaBase = schemaDir + "input-schema.json"
)

// schemaOf returns the compiled input schema of t, or why it cannot be compiled (an
// unknown draft, a $ref to a definition it does not have or to another document), from
// compiled, compiling it and keeping it there if it is not held.
func schemaOf(t *catalog.Tool) compiledSchema {
	raw := inputSchema(t)
	key := schemaKey(raw)
	if cs, ok := compiled.get(key); ok {
		return cs
	}
	return compiled.add(key, schemaCharge(raw), compileSchema(raw))
}

// inputSchema returns t's input schema, or the schema of any object when it has none.
func inputSchema(t *catalog.Tool) json.RawMessage {
	if len(t.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return t.InputSchema
}

// compileSchema compiles an input schema, and its quick form.
func compileSchema(raw json.RawMessage) compiledSchema {
	var cs compiledSchema
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		c := jsonschema.NewCompiler()
		c.UseLoader(noLoader{})
		if err = c.AddResource(schemaBase, doc); err == nil {
			cs.sch, err = c.Compile(schemaBase)
		}
		if err == nil {
			cs.quick = compileQuick(raw)
		}
	}
	cs.err = err
	return cs
}

// schemaKey is the key of a schema in compiled: a hash of its bytes.
func schemaKey(raw []byte) [32]byte { return sha256.Sum256(raw) }

// SchemaProblem reports why t's input schema cannot be used to check arguments, or
// nil when it can. Such a tool's calls go to its server unchecked (see
// ValidateArguments): a front reports the problem once, when the tool is loaded.
//
// The schema it compiles is not kept: a front checks every tool of its catalog, most of
// which are never called, and a call compiles its tool's schema again (see compiled).
// SchemaChecker checks many tools, compiling each distinct schema once.
func SchemaProblem(t *catalog.Tool) error {
	raw := inputSchema(t)
	return schemaProblem(raw, schemaKey(raw))
}

// schemaProblem is SchemaProblem of the schema raw, whose key is key.
func schemaProblem(raw json.RawMessage, key [32]byte) error {
	cs, ok := compiled.peek(key)
	if !ok {
		cs = compileSchema(raw)
	}
	if err := cs.err; err != nil {
		// Without the made-up URLs it was compiled under: "#/$defs/Missing".
		why := strings.ReplaceAll(strings.ReplaceAll(err.Error(), schemaBase, ""), schemaDir, "")
		return fmt.Errorf("its input schema cannot be compiled (%s), so toolshed cannot check the arguments of its calls, which go to the server unchecked; fix the schema in the server", why)
	}
	return nil
}

// SchemaChecker reports the problems of many tools' input schemas, as SchemaProblem
// does, compiling each distinct schema once: catalogs repeat schemas (one server
// configured under several names, tools built from one template), and the 10,000 tools
// of the scale benchmark hold 2,143 distinct ones. It keeps each schema's verdict (a
// hash and an error), never the compiled schema, for as long as the checker is kept.
// The zero value is ready for use; a SchemaChecker is not safe for concurrent use.
type SchemaChecker struct {
	verdicts map[[32]byte]error
}

// Problem returns SchemaProblem(t), from the verdict on the same schema bytes if the
// checker has one.
func (c *SchemaChecker) Problem(t *catalog.Tool) error {
	raw := inputSchema(t)
	key := schemaKey(raw)
	if err, ok := c.verdicts[key]; ok {
		return err
	}
	err := schemaProblem(raw, key)
	if c.verdicts == nil {
		c.verdicts = map[[32]byte]error{}
	}
	c.verdicts[key] = err
	return err
}

// DecodeArguments turns the arguments of a call into a JSON object: absent or null means
// {}, and a JSON string holding an object (as some models send) is unwrapped. Anything
// else is an error wrapping ErrArguments.
func DecodeArguments(raw json.RawMessage) (json.RawMessage, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage(`{}`), nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrArguments, err)
		}
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 || inner[0] != '{' || !json.Valid(inner) {
			return nil, fmt.Errorf("%w: \"arguments\" is a string that does not hold a JSON object; pass an object such as {\"owner\": \"octocat\"}", ErrArguments)
		}
		return json.RawMessage(inner), nil
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, fmt.Errorf("%w: \"arguments\" must be a JSON object of the tool's parameters, such as {\"owner\": \"octocat\"}", ErrArguments)
	}
	return json.RawMessage(b), nil
}

// ValidateArguments checks args, a JSON object, against t's input schema. The error wraps
// ErrArguments and lists every violation with where it is, so a model can fix them all
// in one retry.
//
// Arguments the schema's quick form proves valid (see quickSchema) are not decoded at
// all. Others are, and their numbers are bounded before the validator reads them (see
// maxNumberExponent).
//
// A schema that cannot be compiled (see SchemaProblem) checks nothing: the tool stays
// callable, as it is from clients that do not check arguments, and its server, which
// MCP makes responsible for validating its inputs, has the last word.
func ValidateArguments(t *catalog.Tool, args json.RawMessage) error {
	return validateArguments(t, args, json.Valid(args))
}

// validateArguments is ValidateArguments for args already known to be valid JSON, or
// not (valid): CheckArguments has checked them while decoding, and the quick check
// reads only valid JSON.
func validateArguments(t *catalog.Tool, args json.RawMessage, valid bool) error {
	cs := schemaOf(t)
	sch := cs.sch
	if sch == nil || (cs.quick != nil && valid && cs.quick.valid(bytes.TrimSpace(args))) {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("%w: the arguments are not valid JSON: %v", ErrArguments, err)
	}
	if at := oversizedNumbers(doc); at != nil {
		return fmt.Errorf("%w: the arguments of %s hold numbers too large to check against its input schema (%s); write numbers of at most %d characters with exponents within ±%d (a float64 reaches 1.8e308) and call again", ErrArguments, t.Qualified, strings.Join(at, "; "), maxNumberLength, maxNumberExponent)
	}
	err = sch.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %v", ErrArguments, err)
	}
	var problems []string
	var walk func(u jsonschema.OutputUnit)
	walk = func(u jsonschema.OutputUnit) {
		if u.Error != nil && len(u.Errors) == 0 {
			at := u.InstanceLocation
			if at == "" {
				at = "/"
			}
			problems = append(problems, fmt.Sprintf("at %s: %s", at, u.Error.String()))
		}
		for _, e := range u.Errors {
			walk(e)
		}
	}
	walk(*ve.BasicOutput())
	sort.Strings(problems)
	problems = dedupe(problems)
	if len(problems) == 0 {
		problems = []string{ve.Error()}
	}
	return fmt.Errorf("%w: the arguments do not match the input schema of %s: %s; fix them (tool_describe shows the schema) and call again", ErrArguments, t.Qualified, strings.Join(problems, "; "))
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
