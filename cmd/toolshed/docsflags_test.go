package main

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The flags the docs name, kept in step with the flags the commands define: a flag the
// docs name must exist in the command they name it for, and every flag of every command
// must be named somewhere in the docs.

// docFlag is a flag the docs name: where, and the commands it may belong to (nil: any).
type docFlag struct {
	file string
	line int
	name string
	cmds []string
}

func (f docFlag) String() string { return fmt.Sprintf("%s:%d: --%s", f.file, f.line, f.name) }

// flagScanner finds the flags a doc names and whose they are. It reads code only: lines
// of fenced blocks and inline code spans. A flag belongs to the toolshed command before it
// in its span or block line ("toolshed serve --http 8080", ["serve", "--config", ...]),
// else to one the prose before it on the line names, else to the command of a shell line
// it continues (a backslash), else to the commands its section's heading names; a flag
// the line names after another program ("go test -run X", "docker stop --time 30") is not
// toolshed's and is skipped. Output lines of a console transcript belong to its command.
type flagScanner struct {
	cmd     *regexp.Regexp // a toolshed command named: toolshed serve, or ["serve", ...]
	flagRef *regexp.Regexp
	found   []docFlag
}

func newFlagScanner() *flagScanner {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = regexp.QuoteMeta(c.name)
	}
	alt := strings.Join(names, "|")
	return &flagScanner{
		cmd: regexp.MustCompile(`\btoolshed (` + alt + `)\b|\[\s*"(` + alt + `)"`),
		// -name or --name after a character that cannot be part of a word: "re-run" and
		// "x86-64" are no flags.
		flagRef: regexp.MustCompile(`(?:^|[^\w-])(--?)([a-z][a-z0-9-]*)`),
	}
}

// commandsIn returns the positions and names of the toolshed commands text names.
func (s *flagScanner) commandsIn(text string) (pos []int, names []string) {
	for _, m := range s.cmd.FindAllStringSubmatchIndex(text, -1) {
		name := ""
		if m[2] >= 0 {
			name = text[m[2]:m[3]]
		} else {
			name = text[m[4]:m[5]]
		}
		pos, names = append(pos, m[0]), append(names, name)
	}
	return pos, names
}

// before returns the last command named from offset lo up to offset hi, if any.
func before(pos []int, names []string, lo, hi int) string {
	cmd := ""
	for i, at := range pos {
		if lo <= at && at < hi {
			cmd = names[i]
		}
	}
	return cmd
}

// scan reads one doc.
func (s *flagScanner) scan(file, doc string) {
	var section [7][]string // the commands each heading level names
	inBlock, console := false, false
	consoleCmd := ""                  // the command of the console transcript being read
	continued := false                // the block line before ended in a backslash
	contCmd, contForeign := "", false // the command of the line it continues, or whether it was another program's
	sectionCmds := func() []string {
		for l := len(section) - 1; l > 0; l-- {
			if section[l] != nil {
				return section[l]
			}
		}
		return nil
	}
	// Prose is read a paragraph (or list item, or table row) at a time, so that a code
	// span broken across lines is whole.
	var para []string
	paraLine := 0
	flush := func() {
		text := strings.Join(para, "\n")
		pos, names := s.commandsIn(text)
		for _, m := range codeSpan.FindAllStringIndex(text, -1) {
			n := paraLine + strings.Count(text[:m[0]], "\n")
			span := strings.ReplaceAll(text[m[0]+1:m[1]-1], "\n", " ")
			// The prose before a span gives it a command only on the span's own line.
			lineStart := strings.LastIndexByte(text[:m[0]], '\n') + 1
			s.segment(file, n, span, before(pos, names, lineStart, m[0]), false, sectionCmds())
		}
		para = nil
	}
	for i, line := range strings.Split(doc, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if !inBlock && !strings.HasPrefix(trimmed, "```") && trimmed != "" && !strings.HasPrefix(line, "#") && !startsItem(trimmed) {
			if para == nil {
				paraLine = n
			}
			para = append(para, line)
			continue
		}
		flush()
		if !inBlock && startsItem(trimmed) {
			para, paraLine = []string{line}, n
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			console = inBlock && strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "console"
			consoleCmd, continued = "", false
			continue
		}
		if !inBlock && strings.HasPrefix(line, "#") {
			if level := len(line) - len(strings.TrimLeft(line, "#")); level < len(section) {
				_, section[level] = s.commandsIn(line)
				for l := level + 1; l < len(section); l++ {
					section[l] = nil
				}
			}
		}
		if !inBlock {
			para, paraLine = []string{line}, n // a heading
			flush()
			continue
		}
		if console {
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				_, names := s.commandsIn(cmd)
				consoleCmd = ""
				if len(names) > 0 {
					consoleCmd = names[0]
				}
			} else if consoleCmd != "" {
				for _, m := range s.flagRef.FindAllStringSubmatch(line, -1) {
					s.found = append(s.found, docFlag{file, n, m[2], []string{consoleCmd}})
				}
				continue
			}
		}
		own, foreign := "", false
		if continued {
			own, foreign = contCmd, contForeign
		}
		s.segment(file, n, line, own, foreign, sectionCmds())
		pos, names := s.commandsIn(line)
		if c := before(pos, names, 0, len(line)); c != "" {
			own, foreign = c, false
		} else if !continued {
			foreign = startsForeign(line)
		}
		continued = strings.HasSuffix(strings.TrimRight(line, " "), "\\")
		contCmd, contForeign = own, foreign
	}
	flush()
}

// startsItem reports whether a line of prose starts a paragraph of its own: a list
// item or a table row.
func startsItem(trimmed string) bool {
	return strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "* ") || strings.HasPrefix(trimmed, "|") ||
		numberedItem.MatchString(trimmed)
}

var numberedItem = regexp.MustCompile(`^\d+\. `)

// segment reads the flags of one span or block line. own is the command the context
// gives it (the prose before a span, the line a block line continues), foreign that the
// context is another program's.
func (s *flagScanner) segment(file string, n int, text, own string, foreign bool, section []string) {
	pos, names := s.commandsIn(text)
	spanForeign := startsForeign(text)
	if fields := strings.Fields(text); len(pos) == 0 && len(fields) > 0 && slices.ContainsFunc(commands, func(c command) bool { return c.name == fields[0] }) {
		own, spanForeign = fields[0], false // "serve --stateless": the command without toolshed before it
	}
	for _, m := range s.flagRef.FindAllStringSubmatchIndex(text, -1) {
		dashes, name := text[m[2]:m[3]], text[m[4]:m[5]]
		switch cmd := before(pos, names, 0, m[2]); {
		case cmd != "":
			s.found = append(s.found, docFlag{file, n, name, []string{cmd}})
		case len(pos) > 0 || spanForeign || foreign:
			// After another program, or before the toolshed command: not toolshed's.
		case own != "":
			s.found = append(s.found, docFlag{file, n, name, []string{own}})
		case dashes == "--":
			s.found = append(s.found, docFlag{file, n, name, section})
		}
	}
}

// startsForeign reports whether text starts with a word that is neither a flag nor an
// option's value: a program's name (go, docker, npx), so what follows is its.
func startsForeign(text string) bool {
	fields := strings.Fields(text)
	for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "-") {
		fields = fields[1:] // VAR=value before the program
	}
	if len(fields) == 0 {
		return false
	}
	first := strings.Trim(fields[0], "[](|")
	return first != "" && !strings.HasPrefix(first, "-") && !strings.HasPrefix(first, "$")
}

func scanDocs(t *testing.T) []docFlag {
	t.Helper()
	s := newFlagScanner()
	for _, f := range docFiles(t) {
		s.scan(f, readDoc(t, f))
	}
	return s.found
}

// TestDocsFlags checks that every toolshed flag the docs name exists in the command they
// name it for, or, named alone, in some command.
func TestDocsFlags(t *testing.T) {
	sets := commandFlags(t)
	found := scanDocs(t)
	if len(found) < 50 {
		t.Fatalf("found %d flags in the docs; is the scanner still right?", len(found))
	}
	for _, f := range found {
		if f.name == "h" || f.name == "help" {
			continue
		}
		cmds := f.cmds
		if cmds == nil {
			for _, c := range commands {
				cmds = append(cmds, c.name)
			}
		}
		if _, ok := othersFlags[f.name]; ok {
			continue
		}
		if !slices.ContainsFunc(cmds, func(c string) bool { return hasFlag(sets[c], f.name) }) {
			t.Errorf("%v: no such flag in toolshed %s", f, strings.Join(cmds, " or "))
		}
	}
}

// othersFlags are flags of other programs that the docs write after a toolshed command
// line, where the scanner takes them for toolshed's, and why.
var othersFlags = map[string]string{
	"cli":     "the MCP Inspector's (docs/clients.md)",
	"method":  "the MCP Inspector's, which takes it after the server's command line (docs/clients.md)",
	"version": "toolshed's own, before any command (toolshed --version is toolshed version)",
}

// hasFlag reports whether fs defines the flag name, or, for a name ending in a hyphen
// (--embed-*), a flag that starts with it.
func hasFlag(fs *flag.FlagSet, name string) bool {
	if fs == nil {
		return false
	}
	if prefix, ok := strings.CutSuffix(name, "-"); ok {
		found := false
		fs.VisitAll(func(f *flag.Flag) { found = found || strings.HasPrefix(f.Name, prefix+"-") })
		return found
	}
	return fs.Lookup(name) != nil
}

// TestDocsEveryFlag checks that the docs name every flag of every command for that
// command: in prose, in an example, or in the -h reference of docs/cli.md.
func TestDocsEveryFlag(t *testing.T) {
	named := map[string]map[string]bool{}
	for _, f := range scanDocs(t) {
		if len(f.cmds) != 1 {
			continue
		}
		if named[f.cmds[0]] == nil {
			named[f.cmds[0]] = map[string]bool{}
		}
		named[f.cmds[0]][f.name] = true
	}
	for name, fs := range commandFlags(t) {
		fs.VisitAll(func(f *flag.Flag) {
			if !named[name][f.Name] {
				t.Errorf("no doc names --%s of toolshed %s; add it to docs/cli.md", f.Name, name)
			}
		})
	}
}

// TestFlagScanner checks whose flags the scanner says a doc names.
func TestFlagScanner(t *testing.T) {
	doc := strings.Join([]string{
		"# A page",               // 1
		"`--limit 3` and re-run", // 2: any command's
		"",                       // 3
		"Run `serve --stateless`, then `toolshed stats`",     // 4: serve's
		"and `--db off` on a line of its own.",               // 5: any command's: stats is on the line before
		"A span `toolshed lint",                              // 6
		"--strict` across lines.",                            // 7: lint's, reported at 6, where the span starts
		"## toolshed proxy",                                  // 8
		"Run `toolshed serve --http 8080` and `--db off`.",   // 9: serve's, both
		"`toolshed serve` with `--token`; `go test -run X`.", // 10: serve's; go's skipped
		"`docker stop --time 30`, and `--model`",             // 11: docker's skipped; the section's
		"### Details",                                        // 12
		"```sh",                                              // 13
		"go run ./cmd/toolshed eval --catalog C \\",          // 14: eval's
		"  --queries Q",                                      // 15: eval's, continued
		"kubectl create secret \\",                           // 16
		"  --from-literal=db=x",                              // 17: kubectl's, continued
		`  "args": ["serve", "--config", "f.json"]`,          // 18: serve's
		"[--max-iterations N]",                               // 19: the section's
		"```",                                                // 20
		"```console",                                         // 21
		"$ toolshed lint -h",                                 // 22: lint's
		"  -strict",                                          // 23: lint's
		"```",                                                // 24
		"- a list item with `--listen`",                      // 25: the section's
	}, "\n")
	s := newFlagScanner()
	s.scan("doc.md", doc)
	var got []string
	for _, f := range s.found {
		got = append(got, fmt.Sprintf("%d %s %s", f.line, f.name, strings.Join(f.cmds, "|")))
	}
	want := []string{
		"2 limit ", "4 stateless serve", "5 db ", "6 strict lint",
		"9 http serve", "9 db serve", "10 token serve", "11 model proxy", "14 catalog eval", "15 queries eval",
		"18 config serve", "19 max-iterations proxy", "22 h lint", "23 strict lint", "25 listen proxy",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the scanner found\n%q\nwant\n%q", got, want)
	}
}
