package testupstream

import (
	"path/filepath"
	"testing"
)

// RealPath is dir with its symbolic links resolved, as server-filesystem reports its
// allowed directories.
func RealPath(t testing.TB, dir string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatalf("testupstream: %v", err)
	}
	return p
}
