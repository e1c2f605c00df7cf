package testupstream

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// DocBlock returns the fenced code block that follows the marker <!-- block: ID --> in
// the Markdown file rel (relative to the repo root), without its fences. Tests run
// the commands and configs a page documents through it, so that the page cannot drift
// from what works. A missing marker or block fails the test.
func DocBlock(t testing.TB, rel, id string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Root(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("testupstream: %v", err)
	}
	re := regexp.MustCompile(`(?s)<!-- block: ` + regexp.QuoteMeta(id) + ` -->\s*\n(` + "```" + `[^\n]*)\n(.*?)\n` + "```")
	m := re.FindSubmatch(data)
	if m == nil {
		t.Fatalf("testupstream: %s has no code block after <!-- block: %s -->", rel, id)
	}
	return string(m[2])
}

// DocBlockIDs returns the IDs of every <!-- block: ID --> marker in rel, in order.
func DocBlockIDs(t testing.TB, rel string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Root(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("testupstream: %v", err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`<!-- block: ([^ ]+) -->`).FindAllSubmatch(data, -1) {
		ids = append(ids, strings.TrimSpace(string(m[1])))
	}
	return ids
}
