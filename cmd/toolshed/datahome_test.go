package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// testDir is the tests' directory, removed when they end: it holds the data directory
// and the toolshed binary that toolshedBinary builds.
var testDir string

// TestMain gives the tests a data directory of their own: serve records its searches
// there by default (the search log), never in the home of whoever runs the tests. With
// $TOOLSHED_TEST_ECHO set, the test binary is an upstream server instead (see
// serveEcho).
func TestMain(m *testing.M) {
	if os.Getenv(echoUpstreamEnv) != "" {
		os.Exit(serveEcho())
	}
	dir, err := os.MkdirTemp("", "toolshed-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir = dir
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
