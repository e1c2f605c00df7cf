// Package builtin holds the default catalog: real tools/list output of 21 public MCP servers
// (see catalogs/SOURCE.md), compiled into the binary so every command works on a fresh
// machine without configuration.
package builtin

import (
	"embed"
	"io/fs"
	"path"
	"sort"

	"github.com/toolshed/toolshed/catalog"
)

//go:embed catalogs/*.json
var files embed.FS

// Sources returns the built-in catalog's tool lists, in file-name order.
func Sources() ([]catalog.Source, []catalog.Problem) {
	names, _ := fs.Glob(files, "catalogs/*.json")
	sort.Strings(names)
	var sources []catalog.Source
	var problems []catalog.Problem
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			problems = append(problems, catalog.Problem{Origin: "builtin:" + name, Err: err})
			continue
		}
		base := path.Base(name)
		s, ps := catalog.Parse(data, "builtin:"+base, base[:len(base)-len(path.Ext(base))])
		sources = append(sources, s...)
		problems = append(problems, ps...)
	}
	return sources, problems
}

// Snapshot builds the built-in catalog.
func Snapshot() (*catalog.Snapshot, []catalog.Problem) {
	sources, problems := Sources()
	snap, ps := catalog.Build(sources)
	return snap, append(problems, ps...)
}
