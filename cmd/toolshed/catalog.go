package main

import (
	"fmt"
	"io"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
)

// loadCatalog builds the snapshot of the given catalog files, or of the built-in catalog
// when there are none. Problems are reported on stderr and the rest still loads; a
// catalog with no usable tool at all is an error.
func loadCatalog(files []string, stderr io.Writer) (*catalog.Snapshot, error) {
	var snap *catalog.Snapshot
	var problems []catalog.Problem
	if len(files) == 0 {
		snap, problems = builtin.Snapshot()
	} else {
		snap, problems = catalog.LoadFiles(files...)
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "toolshed: warning: %v\n", p)
	}
	if snap.Len() == 0 {
		return nil, fmt.Errorf("no tools could be loaded from %v; check the files above (a catalog is {\"servers\": [{\"name\", \"tools\"}]} or a tools/list result {\"tools\": [...]})", files)
	}
	return snap, nil
}
