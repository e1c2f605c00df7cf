package bridge_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/toolshed/toolshed/bridge"
)

func TestSnippet(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"empty", "", 200, ""},
		{"short text is unchanged", "Create an issue.", 200, "Create an issue."},
		{"exactly max is unchanged", "abcde fghij", 11, "abcde fghij"},
		{"first paragraph only", "First paragraph.\n\nSecond paragraph.", 200, "First paragraph."},
		{"first paragraph after leading blank lines", "\n\n  First.\n\nSecond.", 200, "First."},
		{"single newlines stay in the paragraph", "One line\nnext line.\n\nOther.", 200, "One line next line."},
		{"whitespace collapsed", "  Create\t an \n issue   now  ", 200, "Create an issue now"},
		{"cut at a word boundary", "aaaa bbbb cccc dddd", 12, "aaaa bbbb…"},
		{"cut before the ellipsis fits max", "one two three four five six", 14, "one two three…"},
		{"runes, not bytes", "café crème brûlée délicieux", 12, "café crème…"},
		{"cut applies to the collapsed text", "aaaa\n\t bbbb   cccc dddd", 12, "aaaa bbbb…"},
		{"max 1 leaves the ellipsis", "hello world", 1, "…"},
		{"Windows line breaks end a paragraph too", "first para\r\n\r\nsecond para", 100, "first para"},
		{"max 0 is empty", "hello world", 0, ""},
		{"negative max is empty", "hello world", -3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bridge.Snippet(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Snippet(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			checkSnippet(t, tt.in, tt.max, got)
		})
	}
}

func TestSnippetLongWord(t *testing.T) {
	in := "a" + strings.Repeat("x", 300) + " tail"
	for _, max := range []int{2, 10, 50, 200} {
		got := bridge.Snippet(in, max)
		if n := utf8.RuneCountInString(got); n != max {
			t.Errorf("Snippet of a %d-character word to %d = %d characters (%q); a word that cannot fit is cut to max", len(in), max, n, got)
		}
		checkSnippet(t, in, max, got)
	}
}

// TestSnippetBuiltin checks the snippet's properties on every real description.
func TestSnippetBuiltin(t *testing.T) {
	snap := builtinSnapshot(t)
	for _, tool := range snap.Tools() {
		for _, max := range []int{20, 80, 200} {
			checkSnippet(t, tool.Description, max, bridge.Snippet(tool.Description, max))
		}
	}
}

// firstParagraph is the expected text before cutting: the first paragraph of in, its
// whitespace collapsed.
func firstParagraph(in string) string {
	in = strings.TrimSpace(strings.ReplaceAll(in, "\r\n", "\n"))
	if i := strings.Index(in, "\n\n"); i >= 0 {
		in = in[:i]
	}
	return strings.Join(strings.Fields(in), " ")
}

func checkSnippet(t *testing.T, in string, max int, got string) {
	t.Helper()
	if max <= 0 {
		if got != "" {
			t.Errorf("Snippet(%.40q…, %d) = %q, want empty for no room", in, max, got)
		}
		return
	}
	if n := utf8.RuneCountInString(got); n > max {
		t.Errorf("Snippet(%.40q…, %d) is %d characters: %q", in, max, n, got)
	}
	if !utf8.ValidString(got) {
		t.Errorf("Snippet(%.40q…, %d) is not valid UTF-8: %q", in, max, got)
	}
	if strings.ContainsAny(got, "\n\t\r") || strings.Contains(got, "  ") || got != strings.TrimSpace(got) {
		t.Errorf("Snippet(%.40q…, %d) = %q has uncollapsed whitespace", in, max, got)
	}
	para := firstParagraph(in)
	if got == para {
		return
	}
	body, cut := strings.CutSuffix(got, "…")
	if !cut {
		t.Errorf("Snippet(%.40q…, %d) = %q is neither the first paragraph nor a cut of it", in, max, got)
		return
	}
	if !strings.HasPrefix(para, body) {
		t.Errorf("Snippet(%.40q…, %d) = %q does not start the first paragraph %q", in, max, got, para)
		return
	}
	// A cut falls at a word boundary unless the last word is too long to keep: then
	// the text before the ellipsis takes every character there is room for.
	rest := para[len(body):]
	atBoundary := body == "" || rest == "" || unicode.IsSpace(rune(rest[0]))
	if !atBoundary && utf8.RuneCountInString(got) != max {
		t.Errorf("Snippet(%.40q…, %d) = %q cuts a word without need", in, max, got)
	}
}
