//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// toolshedBin is the toolshed binary built once for the package's tests.
var toolshedBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolshed-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	toolshedBin = filepath.Join(dir, "toolshed")
	// toolshed serve records its searches in the data directory by default: the
	// tests' go to theirs.
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	build := exec.Command("go", "build", "-o", toolshedBin, "github.com/toolshed/toolshed/cmd/toolshed")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building toolshed:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
