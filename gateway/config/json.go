package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decode parses a configuration document into its root node (nil for an empty
// document). A document named *.json or *.jsonc, or starting with '{' or '[', is read as
// JSON with comments and trailing commas allowed (JSONC, as VS Code writes mcp.json), so
// that syntax errors are reported with line and column. A document that starts with '{'
// but is not JSON may still be YAML flow syntax ({mcpServers: {...}}), unless its name
// says JSON. Anything else is read as YAML.
func decode(data []byte, name string) (*yaml.Node, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	ext := strings.ToLower(filepath.Ext(name))
	isJSON := ext == ".json" || ext == ".jsonc"
	if isJSON || trimmed[0] == '{' || trimmed[0] == '[' {
		clean := stripJSONC(data)
		if len(bytes.TrimSpace(clean)) == 0 {
			return nil, nil // comments only
		}
		var v any
		jsonErr := json.Unmarshal(clean, &v)
		if jsonErr == nil {
			return jsonNode(clean)
		}
		var doc yaml.Node
		if !isJSON && yaml.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 {
			return doc.Content[0], nil
		}
		return nil, jsonError(clean, name, jsonErr)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s is not valid YAML or JSON: %s; fix the syntax on that line", ErrConfig, name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// jsonError describes a JSON syntax error with its line and column.
func jsonError(data []byte, name string, err error) error {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return fmt.Errorf("%w: %s is not valid JSON: %v", ErrConfig, name, err)
	}
	off := int(syn.Offset) - 1 // Offset counts the bytes read, the bad one included
	off = max(0, min(off, len(data)-1))
	line, col := lineCol(lineStarts(data), off)
	return fmt.Errorf("%w: %s:%d:%d: not valid JSON: %s; fix the syntax there (a missing comma, quote or bracket?)", ErrConfig, name, line, col, syn.Error())
}

// stripJSONC blanks out // and /* */ comments and trailing commas outside strings,
// keeping every other byte (and every newline) where it was, so positions still match
// the original text.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out // unterminated: let the JSON error point at it
			}
			end += i + 2 + 2
			for ; i < end; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(out) && isJSONSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonNode turns valid JSON into the yaml.Node tree yaml.v3 would build, with exact
// JSON semantics (duplicate keys kept for the reader to report, any string accepted)
// and line and column set on every node.
func jsonNode(data []byte) (*yaml.Node, error) {
	starts := lineStarts(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	pos := func() (int, int) {
		off := int(dec.InputOffset())
		for off < len(data) && (isJSONSpace(data[off]) || data[off] == ':' || data[off] == ',') {
			off++
		}
		return lineCol(starts, off)
	}
	var build func() (*yaml.Node, error)
	build = func() (*yaml.Node, error) {
		line, col := pos()
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Line: line, Column: col}
		switch t := tok.(type) {
		case json.Delim:
			n.Style = yaml.FlowStyle
			if t == '{' {
				n.Kind, n.Tag = yaml.MappingNode, "!!map"
				for dec.More() {
					kl, kc := pos()
					kt, err := dec.Token()
					if err != nil {
						return nil, err
					}
					key, _ := kt.(string)
					v, err := build()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Style: yaml.DoubleQuotedStyle, Line: kl, Column: kc}, v)
				}
			} else {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
				for dec.More() {
					v, err := build()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, v)
				}
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return nil, err
			}
		case string:
			n.Tag, n.Value, n.Style = "!!str", t, yaml.DoubleQuotedStyle
		case json.Number:
			n.Tag, n.Value = "!!int", t.String()
			if strings.ContainsAny(n.Value, ".eE") {
				n.Tag = "!!float"
			}
		case bool:
			n.Tag, n.Value = "!!bool", fmt.Sprint(t)
		case nil:
			n.Tag, n.Value = "!!null", "null"
		}
		return n, nil
	}
	return build()
}

// lineStarts returns the offset at which each line of data starts.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(starts []int, off int) (int, int) {
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
	i = max(i, 0)
	return i + 1, off - starts[i] + 1
}
