package release

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shippedNotices are the files every release archive and image carries beside the
// binary: the Apache License, and the NOTICE that holds the copyright line and the
// attribution of the third parties' data compiled into the binary.
var shippedNotices = []string{"LICENSE", "NOTICE"}

// TestLicense checks the licence files at the root: LICENSE is the Apache License 2.0's
// text, and NOTICE has the copyright line and names every directory of third parties'
// data, each of which keeps its attribution in a SOURCE.md.
func TestLicense(t *testing.T) {
	license := readRoot(t, "LICENSE")
	for _, want := range []string{"Apache License\n                           Version 2.0, January 2004", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(license, want) {
			t.Errorf("LICENSE is not the Apache License 2.0's text: it lacks %q", want)
		}
	}
	notice := readRoot(t, "NOTICE")
	if !strings.Contains(notice, "Copyright 2026 The toolshed Authors") {
		t.Error("NOTICE lacks the copyright line, Copyright 2026 The toolshed Authors")
	}
	vendored := []string{"internal/gloss", "internal/builtin/catalogs"}
	benches, err := filepath.Glob(filepath.Join(repoRoot, "bench", "*", "SOURCE.md"))
	if err != nil || len(benches) == 0 {
		t.Fatalf("no bench/*/SOURCE.md (%v)", err)
	}
	for _, b := range benches {
		rel, _ := filepath.Rel(repoRoot, filepath.Dir(b))
		vendored = append(vendored, filepath.ToSlash(rel))
	}
	for _, dir := range vendored {
		if _, err := os.Stat(filepath.Join(repoRoot, dir, "SOURCE.md")); err != nil {
			t.Errorf("%s has no SOURCE.md with its attribution: %v", dir, err)
		}
		if !strings.Contains(notice, dir) {
			t.Errorf("NOTICE does not name %s, whose data is a third party's", dir)
		}
	}
}

// TestLicenseShipped checks that the release archives and both images carry LICENSE and
// NOTICE: .goreleaser.yaml's archive files match them, the Dockerfile's build stage
// copies them into the image's root filesystem (TestImage finds them in the built
// image), and Dockerfile.node's final stage copies them.
func TestLicenseShipped(t *testing.T) {
	c := readGoreleaser(t)
	for _, name := range shippedNotices {
		if !slices.ContainsFunc(c.Archives[0].Files, func(pattern string) bool {
			ok, _ := filepath.Match(pattern, name)
			return ok
		}) {
			t.Errorf(".goreleaser.yaml: the archives' files %q do not take %s", c.Archives[0].Files, name)
		}
	}

	stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	copied := false
	for _, in := range stages[1].steps {
		copied = copied || in.cmd == "RUN" && strings.Contains(in.args, "cp LICENSE NOTICE /out/rootfs/usr/share/doc/toolshed/")
	}
	if !copied {
		t.Error("Dockerfile: the build stage does not copy LICENSE and NOTICE into /out/rootfs/usr/share/doc/toolshed/")
	}

	node := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile.node"))
	final := node[len(node)-1]
	if !slices.ContainsFunc(final.steps, func(in instruction) bool {
		return in.cmd == "COPY" && in.args == "LICENSE NOTICE /usr/share/doc/toolshed/"
	}) {
		t.Error("Dockerfile.node: the final stage does not COPY LICENSE NOTICE /usr/share/doc/toolshed/")
	}
}

func readRoot(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(b)
}
