package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// Parse reads one catalog document. It accepts, in this order:
//
//   - the catalog form {"servers": [{"name", "tools": [Tool...], "alwaysLoad"?}...]};
//   - a bare MCP tools/list result {"tools": [Tool...]}, whose server is named
//     defaultServer;
//   - a whole JSON-RPC response {"result": {"tools": [...]}};
//   - a bare JSON array of tools.
//
// origin names the document in problems. A document that is not JSON, or no tool list,
// yields no sources and one problem; a malformed server entry yields a problem and the
// other servers still load. Tool-level checks happen in Build.
func Parse(data []byte, origin, defaultServer string) ([]Source, []Problem) {
	fail := func(err error) ([]Source, []Problem) {
		return nil, []Problem{{Origin: origin, Err: err}}
	}
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if !json.Valid(data) {
		var v any
		return fail(fmt.Errorf("%w: %v; a catalog is a JSON document such as {\"tools\": [...]}", ErrNotJSON, json.Unmarshal(data, &v)))
	}
	switch k := kind(data); k {
	case "an array":
		return []Source{{Server: defaultServer, Tools: rawElements(data), Origin: origin}}, nil
	case "an object":
	default:
		return fail(fmt.Errorf("%w: the document is %s; expected {\"servers\": [...]} or {\"tools\": [...]}", ErrFormat, k))
	}
	servers, tools := member(data, "servers"), member(data, "tools")
	if result := member(data, "result"); servers == nil && tools == nil && kind(result) == "an object" {
		servers, tools = member(result, "servers"), member(result, "tools")
	}
	switch {
	case servers != nil:
		return parseServers(servers, origin)
	case tools != nil:
		if kind(tools) != "an array" {
			return fail(fmt.Errorf("%w: \"tools\" must be an array, got %s", ErrFormat, kind(tools)))
		}
		return []Source{{Server: defaultServer, Tools: rawElements(tools), Origin: origin}}, nil
	}
	return fail(fmt.Errorf("%w: the object has neither \"servers\" nor \"tools\"; expected {\"servers\": [{\"name\": ..., \"tools\": [...]}]} or a tools/list result {\"tools\": [...]}", ErrFormat))
}

// member returns the value of key in the valid JSON object obj (the last one, if the
// key repeats, as JSON.parse does), or nil. Keys match exactly.
func member(obj []byte, key string) json.RawMessage {
	var v json.RawMessage
	jsonscan.Members(obj, func(k string, val []byte) bool {
		if k == key {
			v = val
		}
		return true
	})
	return v
}

// rawElements returns the elements of the valid JSON array arr.
func rawElements(arr []byte) []json.RawMessage {
	out := []json.RawMessage{}
	jsonscan.Elements(arr, func(v []byte) { out = append(out, v) })
	return out
}

func parseServers(raw json.RawMessage, origin string) ([]Source, []Problem) {
	if kind(raw) != "an array" {
		return nil, []Problem{{Origin: origin, Err: fmt.Errorf("%w: \"servers\" must be an array, got %s", ErrFormat, kind(raw))}}
	}
	var sources []Source
	var problems []Problem
	for i, e := range rawElements(raw) {
		label := fmt.Sprintf("#%d", i+1)
		if kind(e) != "an object" {
			problems = append(problems, Problem{Origin: origin, Server: label, Err: fmt.Errorf("%w: a server entry must be an object, got %s", ErrFormat, kind(e))})
			continue
		}
		src := Source{Origin: origin}
		name := member(e, "name")
		if kind(name) != "a string" {
			problems = append(problems, Problem{Origin: origin, Server: label, Err: fmt.Errorf("%w: a server entry needs a string \"name\"", ErrServerName)})
			continue
		}
		src.Server = jsonscan.Unquote(name)
		switch al := member(e, "alwaysLoad"); {
		case absent(al):
		case string(al) == "true" || string(al) == "false":
			src.AlwaysLoad = string(al) == "true"
		default:
			problems = append(problems, Problem{Origin: origin, Server: src.Server, Err: fmt.Errorf("%w: \"alwaysLoad\" must be true or false, got %s", ErrField, kind(al))})
			continue
		}
		if tools := member(e, "tools"); !absent(tools) {
			if kind(tools) != "an array" {
				problems = append(problems, Problem{Origin: origin, Server: src.Server, Err: fmt.Errorf("%w: \"tools\" must be an array, got %s", ErrFormat, kind(tools))})
				continue
			}
			src.Tools = rawElements(tools)
		}
		sources = append(sources, src)
	}
	return sources, problems
}

// ReadFile reads and parses one catalog file. A bare tool list takes its server name from
// the file name ("github.json" is server "github").
func ReadFile(path string) ([]Source, []Problem) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, []Problem{{Origin: path, Err: fmt.Errorf("cannot read the catalog: %w", err)}}
	}
	base := filepath.Base(path)
	return Parse(data, path, ServerNameFrom(strings.TrimSuffix(base, filepath.Ext(base))))
}

// LoadFiles builds one Snapshot from catalog files. Problems in one file never stop the
// others from loading.
func LoadFiles(paths ...string) (*Snapshot, []Problem) {
	var sources []Source
	var problems []Problem
	for _, p := range paths {
		s, ps := ReadFile(p)
		sources = append(sources, s...)
		problems = append(problems, ps...)
	}
	snap, ps := Build(sources)
	return snap, append(problems, ps...)
}
