package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/toolshed/toolshed/internal/golden"
)

// The README and the pages of docs/ show commands and what they print. These tests keep
// them true: every transcript in a ```console block is run and its output compared (the
// -h of each command among them, in docs/cli.md), every toolshed flag they name must
// exist, every flag must be documented, and every relative link must lead somewhere.

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// docFiles are the Markdown files a user reads, relative to the root: README.md and
// docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, _ := filepath.Rel(repoRoot, p)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docBlock is one fenced code block of a doc: its file, its info string, its first
// line's number, and its lines.
type docBlock struct {
	file  string
	info  string
	line  int
	lines []string
}

func docBlocks(t *testing.T, rel string) []docBlock {
	t.Helper()
	var blocks []docBlock
	var cur *docBlock
	for i, line := range strings.Split(readDoc(t, rel), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &docBlock{file: rel, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 2}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s: the code block at line %d is not closed", rel, cur.line)
	}
	return blocks
}

// transcript is one command of a console block and the output the doc shows for it.
type transcript struct {
	file string
	line int
	args []string
	want string
}

func (tc transcript) String() string {
	return fmt.Sprintf("%s:%d: toolshed %s", tc.file, tc.line, strings.Join(tc.args, " "))
}

// transcripts reads the "$ toolshed ..." commands of console blocks and the lines after
// each, up to the next command.
func transcripts(t *testing.T, blocks []docBlock) []transcript {
	t.Helper()
	var out []transcript
	for _, b := range blocks {
		if b.info != "console" {
			continue
		}
		first := len(out)
		for i, line := range b.lines {
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				args, err := shellWords(cmd)
				if err != nil || len(args) == 0 || args[0] != "toolshed" {
					t.Fatalf("%s:%d: a console command must be a toolshed command line, got %q (%v)", b.file, b.line+i, cmd, err)
				}
				out = append(out, transcript{file: b.file, line: b.line + i, args: args[1:]})
				continue
			}
			if len(out) == first {
				t.Fatalf("%s:%d: a console block must start with a \"$ toolshed\" command", b.file, b.line+i)
			}
			out[len(out)-1].want += line + "\n"
		}
	}
	return out
}

func allTranscripts(t *testing.T) []transcript {
	t.Helper()
	var out []transcript
	for _, f := range docFiles(t) {
		out = append(out, transcripts(t, docBlocks(t, f))...)
	}
	return out
}

// TestDocsTranscripts runs every console transcript of the docs and compares what the
// command prints (stderr, then stdout) with what the doc shows. With -update it writes
// what the commands print into the docs instead: after a change of a command's help or
// output, check the diff.
func TestDocsTranscripts(t *testing.T) {
	ts := allTranscripts(t)
	if len(ts) == 0 {
		t.Fatal("the docs have no console transcripts; docs/cli.md should show commands with their output")
	}
	outputs := map[string]map[int]string{} // file, then the command's line: what it prints
	for _, tc := range ts {
		t.Run(fmt.Sprintf("%s:%d", tc.file, tc.line), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("%s exited %d: %s", tc, code, stderr.String())
			}
			got := stderr.String() + stdout.String()
			if outputs[tc.file] == nil {
				outputs[tc.file] = map[int]string{}
			}
			outputs[tc.file][tc.line] = got
			if got != tc.want && !golden.Updating() {
				t.Errorf("%s prints something else than the doc shows (run the test with -update after checking the change).\n--- doc\n%s--- now\n%s", tc, tc.want, got)
			}
		})
	}
	if golden.Updating() {
		for file, out := range outputs {
			rewriteTranscripts(t, file, ts, out)
		}
	}
}

// rewriteTranscripts writes into the doc rel the output each of its transcripts printed
// (out, by the line of the transcript's command) in place of the output it showed.
func rewriteTranscripts(t *testing.T, rel string, ts []transcript, out map[int]string) {
	t.Helper()
	lines := strings.Split(readDoc(t, rel), "\n")
	for i := len(ts) - 1; i >= 0; i-- { // from the end, so that earlier line numbers hold
		tc := ts[i]
		got, ok := out[tc.line]
		if tc.file != rel || !ok {
			continue
		}
		shown := strings.Count(tc.want, "\n")
		printed := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		lines = append(lines[:tc.line], append(printed, lines[tc.line+shown:]...)...)
	}
	if err := os.WriteFile(filepath.Join(repoRoot, filepath.FromSlash(rel)), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocsHelpReference checks that docs/cli.md shows the -h of every command: with
// TestDocsTranscripts, its reference is what each command prints.
func TestDocsHelpReference(t *testing.T) {
	shown := map[string]bool{}
	for _, tc := range transcripts(t, docBlocks(t, "docs/cli.md")) {
		if len(tc.args) == 2 && tc.args[1] == "-h" {
			shown[tc.args[0]] = true
		}
	}
	for _, c := range commands {
		if !shown[c.name] {
			t.Errorf("docs/cli.md does not show `$ toolshed %s -h` in its reference", c.name)
		}
	}
}

// shellWords splits a command line as a POSIX shell would for words, single and double
// quotes (without expansions).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unclosed %c", c)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`toolshed search "create a github issue" --limit 3`, []string{"toolshed", "search", "create a github issue", "--limit", "3"}},
		{`a 'b c'd  e`, []string{"a", "b cd", "e"}},
		{``, nil},
	}
	for _, tc := range tests {
		got, err := shellWords(tc.in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := shellWords(`a "b`); err == nil {
		t.Error(`shellWords("a \"b") did not report the unclosed quote`)
	}
}

// TestDocsFigures checks the figures the docs state in prose about the built-in catalog
// against what `toolshed tokens --json` measures now.
func TestDocsFigures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"tokens", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("toolshed tokens --json: exit %d: %s", code, stderr.String())
	}
	var m struct {
		Tools        int `json:"tools"`
		Servers      int `json:"servers"`
		TotalTokens  int `json:"total_tokens"`
		BridgeTokens int `json:"bridge_tokens"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	spelled := map[int]string{21: "Twenty-one", 22: "Twenty-two", 23: "Twenty-three"}[m.Servers]
	thousands := fmt.Sprintf("%d,000", (m.TotalTokens+500)/1000)
	claims := []struct {
		file, what, pattern, want string
	}{
		{"README.md", "servers in the opening", `(\S+) popular MCP\s+servers are`, spelled},
		{"README.md", "their tokens, to the thousand", `popular MCP\s+servers are ([0-9,]+) tokens`, thousands},
		{"README.md", "servers of the default", `the tool definitions of (\d+) real MCP servers`, fmt.Sprint(m.Servers)},
		{"docs/cli.md", "servers of the CLI's catalog", `the real tool lists of (\d+) public`, fmt.Sprint(m.Servers)},
		{"docs/cli.md", "tools of the CLI's catalog", `On the built-in catalog \((\d+) tools\)`, fmt.Sprint(m.Tools)},
	}
	for _, c := range claims {
		got := regexp.MustCompile(c.pattern).FindStringSubmatch(readDoc(t, c.file))
		if got == nil {
			t.Errorf("%s no longer states the %s (pattern %q); update this test with the doc", c.file, c.what, c.pattern)
			continue
		}
		if got[1] != c.want {
			t.Errorf("%s states %q for the %s; the built-in catalog measures %q", c.file, got[1], c.what, c.want)
		}
	}
	bridgeClaim := regexp.MustCompile("`tool_call` \\(under (\\d+) tokens\\)").FindStringSubmatch(readDoc(t, "README.md"))
	if bridgeClaim == nil {
		t.Error("README.md no longer states the bridge tools' tokens (`tool_call` (under N tokens))")
	} else if limit, _ := strconv.Atoi(bridgeClaim[1]); m.BridgeTokens >= limit {
		t.Errorf("README.md says the bridge tools cost under %d tokens; they cost %d", limit, m.BridgeTokens)
	}
}

// TestDocsLimits checks that the Limits table of docs/http.md has a row for each flag
// that bounds what the HTTP servers hold or read, of serve and of proxy.
func TestDocsLimits(t *testing.T) {
	doc := readDoc(t, "docs/http.md")
	_, table, ok := strings.Cut(doc, "\n## Limits\n")
	if !ok {
		t.Fatal("docs/http.md has no ## Limits section")
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	for _, flag := range []string{"--max-connections", "--max-connections-per-client", "--body-timeout", "--max-answer-mib", "--tool-cache-mib", "--probe-addr"} {
		if !strings.Contains(table, "| `"+flag+" ") {
			t.Errorf("the Limits table of docs/http.md has no row for %s:\n%s", flag, table)
		}
	}
}

// mdLink is a Markdown link or image target: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocsLinks checks that every relative link of the docs leads to a file or directory
// of the repository, and every #anchor to a heading of the page it names.
func TestDocsLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		a := headingAnchors(readDoc(t, rel))
		anchors[rel] = a
		return a
	}
	checked := 0
	for _, f := range docFiles(t) {
		for n, line := range proseLines(readDoc(t, f)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				page := f
				if path != "" {
					page = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(page))); err != nil {
						t.Errorf("%s:%d: the link %s leads nowhere: %v", f, n+1, target, err)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(page, ".md") && !anchorsOf(page)[anchor] {
					t.Errorf("%s:%d: the link %s names no heading of %s", f, n+1, target, page)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative link in the docs; is the pattern still right?")
	}
}

// proseLines returns a doc's lines with those inside fenced code blocks, and inline code
// spans, blanked: links are only in prose.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	inBlock := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			lines[i] = ""
			continue
		}
		if inBlock {
			lines[i] = ""
			continue
		}
		lines[i] = codeSpan.ReplaceAllString(line, "``")
	}
	return lines
}

// codeSpan is an inline code span of one line.
var codeSpan = regexp.MustCompile("`[^`]*`")

// headingAnchors returns the anchors GitHub gives a doc's headings: the heading in lower
// case, without punctuation but hyphens and underscores, spaces as hyphens, and -1, -2
// after repeats.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLinesKeepCode(doc) {
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		text = strings.TrimSpace(strings.TrimLeft(text, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// proseLinesKeepCode returns a doc's lines outside fenced code blocks, code spans kept
// (a heading's anchor keeps their text).
func proseLinesKeepCode(doc string) []string {
	var out []string
	inBlock := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			out = append(out, line)
		}
	}
	return out
}

func TestHeadingAnchors(t *testing.T) {
	doc := "# toolshed proxy: the Messages API\n## Stateless: `--stateless`\n```\n# not a heading\n```\n## Tests\n## Tests\n### Hybrid search, with *your* model (1.0)\n"
	want := []string{"toolshed-proxy-the-messages-api", "stateless---stateless", "tests", "tests-1", "hybrid-search-with-your-model-10"}
	got := headingAnchors(doc)
	for _, a := range want {
		if !got[a] {
			t.Errorf("headingAnchors lacks %q: %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("headingAnchors = %v, want %q", got, want)
	}
}
