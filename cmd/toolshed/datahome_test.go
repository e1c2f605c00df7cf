package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives the tests a data directory of their own: serve records its searches
// there by default (the search log), never in the home of whoever runs the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolshed-cmd-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
