package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what a check reports.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = format
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got  string
		fail bool
	}{{"a\nb\n", false}, {"a\nc\n", true}, {"a\n", true}, {"a\nb\nc\n", true}} {
		r := &recorder{TB: t}
		Check(r, path, []byte(c.got))
		if r.failed != c.fail {
			t.Errorf("Check(%q) failed %v, want %v", c.got, r.failed, c.fail)
		}
	}
	r := &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing.golden"), []byte("x"))
	if !r.failed || !strings.Contains(r.msg, "-update") {
		t.Errorf("a missing golden file must fail and say how to write it")
	}
}
