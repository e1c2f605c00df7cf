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
	var doc wireDocument
	switch k := kind(data); k {
	case "an array":
		var tools []json.RawMessage
		if err := json.Unmarshal(data, &tools); err != nil {
			return fail(notJSON(err))
		}
		return []Source{{Server: defaultServer, Tools: tools, Origin: origin}}, nil
	case "an object":
		if sources, ok := parseFast(data, origin); ok {
			return sources, nil
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return fail(notJSON(err))
		}
	default:
		if !json.Valid(data) {
			var v any
			return fail(notJSON(json.Unmarshal(data, &v)))
		}
		return fail(fmt.Errorf("%w: the document is %s; expected {\"servers\": [...]} or {\"tools\": [...]}", ErrFormat, k))
	}
	if doc.Servers == nil && doc.Tools == nil && kind(doc.Result) == "an object" {
		var inner wireDocument
		if json.Unmarshal(doc.Result, &inner) == nil {
			doc = inner
		}
	}
	switch {
	case doc.Servers != nil:
		return parseServers(doc.Servers, origin)
	case doc.Tools != nil:
		var tools []json.RawMessage
		if err := json.Unmarshal(doc.Tools, &tools); err != nil || isNull(doc.Tools) {
			return fail(fmt.Errorf("%w: \"tools\" must be an array, got %s", ErrFormat, kind(doc.Tools)))
		}
		return []Source{{Server: defaultServer, Tools: tools, Origin: origin}}, nil
	}
	return fail(fmt.Errorf("%w: the object has neither \"servers\" nor \"tools\"; expected {\"servers\": [{\"name\": ..., \"tools\": [...]}]} or a tools/list result {\"tools\": [...]}", ErrFormat))
}

// wireDocument is every top-level shape Parse accepts; members stay raw so that one
// malformed server does not spoil the others.
type wireDocument struct {
	Servers json.RawMessage `json:"servers"`
	Tools   json.RawMessage `json:"tools"`
	Result  json.RawMessage `json:"result"`
}

type wireServer struct {
	Name       json.RawMessage `json:"name"`
	AlwaysLoad json.RawMessage `json:"alwaysLoad"`
	Tools      json.RawMessage `json:"tools"`
}

// parseFast decodes a well-formed catalog in one pass. It declines (ok false) anything
// unusual, which the member-by-member path then reports precisely.
func parseFast(data []byte, origin string) (sources []Source, ok bool) {
	var doc struct {
		Servers []struct {
			Name       *string           `json:"name"`
			AlwaysLoad bool              `json:"alwaysLoad"`
			Tools      []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if json.Unmarshal(data, &doc) != nil || doc.Servers == nil {
		return nil, false
	}
	for _, s := range doc.Servers {
		if s.Name == nil {
			return nil, false
		}
		sources = append(sources, Source{Server: *s.Name, AlwaysLoad: s.AlwaysLoad, Tools: s.Tools, Origin: origin})
	}
	return sources, true
}

func notJSON(err error) error {
	return fmt.Errorf("%w: %v; a catalog is a JSON document such as {\"tools\": [...]}", ErrNotJSON, err)
}

func parseServers(raw json.RawMessage, origin string) ([]Source, []Problem) {
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || isNull(raw) {
		return nil, []Problem{{Origin: origin, Err: fmt.Errorf("%w: \"servers\" must be an array, got %s", ErrFormat, kind(raw))}}
	}
	var sources []Source
	var problems []Problem
	for i, e := range entries {
		label := fmt.Sprintf("#%d", i+1)
		var w wireServer
		if kind(e) != "an object" || json.Unmarshal(e, &w) != nil {
			problems = append(problems, Problem{Origin: origin, Server: label, Err: fmt.Errorf("%w: a server entry must be an object, got %s", ErrFormat, kind(e))})
			continue
		}
		src := Source{Origin: origin}
		if json.Unmarshal(w.Name, &src.Server) != nil || isNull(w.Name) {
			problems = append(problems, Problem{Origin: origin, Server: label, Err: fmt.Errorf("%w: a server entry needs a string \"name\"", ErrServerName)})
			continue
		}
		if !absent(w.AlwaysLoad) && json.Unmarshal(w.AlwaysLoad, &src.AlwaysLoad) != nil {
			problems = append(problems, Problem{Origin: origin, Server: src.Server, Err: fmt.Errorf("%w: \"alwaysLoad\" must be true or false, got %s", ErrField, kind(w.AlwaysLoad))})
			continue
		}
		if !absent(w.Tools) && (kind(w.Tools) != "an array" || json.Unmarshal(w.Tools, &src.Tools) != nil) {
			problems = append(problems, Problem{Origin: origin, Server: src.Server, Err: fmt.Errorf("%w: \"tools\" must be an array, got %s", ErrFormat, kind(w.Tools))})
			continue
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
