package testupstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ShellLine quotes a command line for sh -c.
func ShellLine(command string, args []string) string {
	quoted := make([]string, 0, len(args)+1)
	for _, a := range append([]string{command}, args...) {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(quoted, " ")
}

// Gated returns a command line that runs command args only once the test has called
// open, as a server that npx is still installing starts late: a shell that waits for
// a file of t.TempDir() to exist, then execs the command (so that it is the process a
// client started, and ends with its process group).
func Gated(t testing.TB, command string, args []string) (gatedCommand string, gatedArgs []string, open func()) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	script := "while [ ! -e " + ShellLine(gate, nil) + " ]; do sleep 0.05; done; exec " + ShellLine(command, args)
	return "sh", []string{"-c", script}, func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatalf("testupstream: opening the gate: %v", err)
		}
	}
}
