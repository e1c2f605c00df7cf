package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README shows commands and what they print. These tests run them, so that the
// README cannot drift from the code: every transcript in a ```console block is run and
// its output compared, and every toolshed flag the README names anywhere in a code block
// must exist.

// readmeBlock is one fenced code block of the README: its info string, its first line's
// number, and its lines.
type readmeBlock struct {
	info  string
	line  int
	lines []string
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		t.Fatalf("README.md: the code block at line %d is not closed", cur.line)
	}
	return blocks
}

// transcript is one command of a console block and the output the README shows for it.
type transcript struct {
	line int
	args []string
	want string
}

// transcripts reads the "$ toolshed ..." commands of console blocks and the lines after
// each, up to the next command.
func transcripts(t *testing.T, blocks []readmeBlock) []transcript {
	t.Helper()
	var out []transcript
	for _, b := range blocks {
		if b.info != "console" {
			continue
		}
		for i, line := range b.lines {
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				args, err := shellWords(cmd)
				if err != nil || len(args) == 0 || args[0] != "toolshed" {
					t.Fatalf("README.md:%d: a console command must be a toolshed command line, got %q (%v)", b.line+i, cmd, err)
				}
				out = append(out, transcript{line: b.line + i, args: args[1:]})
				continue
			}
			if len(out) == 0 || out[len(out)-1].line < b.line {
				t.Fatalf("README.md:%d: a console block must start with a \"$ toolshed\" command", b.line+i)
			}
			out[len(out)-1].want += line + "\n"
		}
	}
	return out
}

func TestReadmeTranscripts(t *testing.T) {
	ts := transcripts(t, readmeBlocks(t))
	if len(ts) == 0 {
		t.Fatal("README.md has no console transcripts; the CLI section should show commands with their output")
	}
	for _, tc := range ts {
		t.Run(fmt.Sprint("line", tc.line), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("README.md:%d: toolshed %s exited %d: %s", tc.line, strings.Join(tc.args, " "), code, stderr.String())
			}
			got := stderr.String() + stdout.String()
			if got != tc.want {
				t.Errorf("README.md:%d: toolshed %s prints something else than the README shows.\n--- README\n%s--- now\n%s",
					tc.line, strings.Join(tc.args, " "), tc.want, got)
			}
		})
	}
}

// flagMention is a toolshed command line in a README code block, up to the end of its line.
var flagMention = regexp.MustCompile(`\btoolshed (serve|proxy|search|describe|tokens|eval)\b(.*)`)

var flagName = regexp.MustCompile(`(?:^|[\s\[])--?([a-z][a-z0-9-]*)`)

func TestReadmeFlags(t *testing.T) {
	defined := map[string]map[string]bool{}
	for _, c := range commands {
		var stdout, stderr bytes.Buffer
		run([]string{c.name, "-h"}, &stdout, &stderr)
		flags := map[string]bool{"h": true, "help": true}
		for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(stderr.String()+stdout.String(), -1) {
			flags[m[1]] = true
		}
		defined[c.name] = flags
	}
	checked := 0
	for _, b := range readmeBlocks(t) {
		for i, line := range b.lines {
			m := flagMention.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			rest := m[2]
			if j := strings.Index(rest, "#"); j >= 0 {
				rest = rest[:j] // a comment
			}
			for _, f := range flagName.FindAllStringSubmatch(rest, -1) {
				checked++
				if !defined[m[1]][f[1]] {
					t.Errorf("README.md:%d: toolshed %s has no flag --%s", b.line+i, m[1], f[1])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no toolshed flags in the README's code blocks; is the pattern still right?")
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

// TestReadmeFigures checks the figures the README states in prose about the built-in
// catalog against what `toolshed tokens --json` measures now.
func TestReadmeFigures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
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
		what, pattern, want string
	}{
		{"servers in the opening", `(\S+) popular MCP\s+servers are`, spelled},
		{"their tokens, to the thousand", `popular MCP\s+servers are ([0-9,]+) tokens`, thousands},
		{"servers of the default", `the tool definitions of (\d+) real MCP servers`, fmt.Sprint(m.Servers)},
		{"servers of the CLI's catalog", `the real tool lists of (\d+) public`, fmt.Sprint(m.Servers)},
	}
	for _, c := range claims {
		got := regexp.MustCompile(c.pattern).FindStringSubmatch(readme)
		if got == nil {
			t.Errorf("README.md no longer states the %s (pattern %q); update this test with the README", c.what, c.pattern)
			continue
		}
		if got[1] != c.want {
			t.Errorf("README.md states %q for the %s; the built-in catalog measures %q", got[1], c.what, c.want)
		}
	}
	bridgeClaim := regexp.MustCompile("`tool_call` \\(under (\\d+) tokens\\)").FindStringSubmatch(readme)
	if bridgeClaim == nil {
		t.Error("README.md no longer states the bridge tools' tokens (`tool_call` (under N tokens))")
	} else if limit, _ := strconv.Atoi(bridgeClaim[1]); m.BridgeTokens >= limit {
		t.Errorf("README.md says the bridge tools cost under %d tokens; they cost %d", limit, m.BridgeTokens)
	}
}
