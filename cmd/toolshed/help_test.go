package main

import (
	"bytes"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The tests of every command's -h: it names every flag the command defines, each with
// what it takes, on stdout where a pager reads it.

// commandFlags returns the FlagSet of every command, read through seeFlags while
// running the command with -h, which stops at the parse.
func commandFlags(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	out := map[string]*flag.FlagSet{}
	for _, c := range commands {
		var seen *flag.FlagSet
		seeFlags = func(fs *flag.FlagSet) { seen = fs }
		var stdout, stderr bytes.Buffer
		code := run([]string{c.name, "-h"}, &stdout, &stderr)
		seeFlags = nil
		if seen == nil {
			t.Fatalf("toolshed %s -h parsed no flags (exit %d); every command answers -h with its usage", c.name, code)
		}
		out[c.name] = seen
	}
	return out
}

// isBool reports whether f takes no value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// synopsisFlag is a flag in a usage line, with the placeholder after it ("--http ADDR"),
// if any.
var synopsisFlag = regexp.MustCompile(`--([a-z][a-z0-9-]*)(?: ([A-Z][A-Z0-9_]*))?`)

// TestHelpNamesEveryFlag checks that each command's usage line, the lines of -h before
// its first blank line, names every flag the command defines with the placeholder its
// description gives, and no flag it does not define. serve's named 6 of its 27.
func TestHelpNamesEveryFlag(t *testing.T) {
	for name, fs := range commandFlags(t) {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{name, "-h"}, &stdout, &stderr); code != 0 {
				t.Fatalf("toolshed %s -h: exit %d, want 0", name, code)
			}
			synopsis, _, _ := strings.Cut(stdout.String(), "\n\n")
			if synopsis != "usage: toolshed "+name && !strings.HasPrefix(synopsis, "usage: toolshed "+name+" ") {
				t.Fatalf("toolshed %s -h does not start with its usage line:\n%s", name, stdout.String())
			}
			named := map[string]string{}
			for _, m := range synopsisFlag.FindAllStringSubmatch(synopsis, -1) {
				named[m[1]] = m[2]
			}
			fs.VisitAll(func(f *flag.Flag) {
				placeholder, ok := named[f.Name]
				want, _ := flag.UnquoteUsage(f)
				switch {
				case !ok:
					t.Errorf("the usage line of toolshed %s does not name --%s:\n%s", name, f.Name, synopsis)
				case isBool(f) && placeholder != "":
					t.Errorf("the usage line of toolshed %s gives --%s a value, %s; it takes none", name, f.Name, placeholder)
				case !isBool(f) && placeholder != want:
					t.Errorf("the usage line of toolshed %s has --%s %s; its description says %s", name, f.Name, placeholder, want)
				}
			})
			for n := range named {
				if fs.Lookup(n) == nil {
					t.Errorf("the usage line of toolshed %s names --%s, which it does not have", name, n)
				}
			}
		})
	}
}

// TestFlagPlaceholders checks that every flag that takes a value says what it takes with
// a placeholder in capitals (`-tool-search MODE`), not the type the flag package falls
// back to (`-tool-search string`, `-max-iterations int`).
func TestFlagPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	for name, fs := range commandFlags(t) {
		fs.VisitAll(func(f *flag.Flag) {
			if isBool(f) {
				return
			}
			if p, _ := flag.UnquoteUsage(f); !placeholder.MatchString(p) {
				t.Errorf("toolshed %s -%s: the description names no placeholder in `CAPITALS` (-h shows %q): %s", name, f.Name, p, f.Usage)
			}
		})
	}
}

// TestHelpOnStdout checks that -h, --help and "toolshed help COMMAND" print the same
// usage to stdout with exit 0, so that `toolshed serve -h | less` shows it; they printed
// it to stderr, and "help serve" printed the list of commands.
func TestHelpOnStdout(t *testing.T) {
	for _, c := range commands {
		var want string
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != 0 || stderr.Len() > 0 || !strings.HasPrefix(stdout.String(), "usage: toolshed "+c.name) {
				t.Errorf("toolshed %s: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0",
					strings.Join(args, " "), code, firstLine(stdout.String()), firstLine(stderr.String()))
				continue
			}
			if want == "" {
				want = stdout.String()
			} else if stdout.String() != want {
				t.Errorf("toolshed %s prints another usage than toolshed %s -h", strings.Join(args, " "), c.name)
			}
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestWrongFlagOneLine checks that a flag that does not exist, or lacks its value, is
// reported once, on one line of stderr that says where the flags are: the flag package
// printed the error, then the whole usage, and then the command the error again.
func TestWrongFlagOneLine(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"serve --bogus", "toolshed serve: flag provided but not defined: -bogus ('toolshed serve -h' lists its flags)\n"},
		{"search --limit", "toolshed search: flag needs an argument: -limit ('toolshed search -h' lists its flags)\n"},
		{"proxy --max-iterations many", "toolshed proxy: invalid value \"many\" for flag -max-iterations: parse error ('toolshed proxy -h' lists its flags)\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(strings.Fields(tc.args), &stdout, &stderr)
		if code != 2 || stdout.Len() > 0 || stderr.String() != tc.want {
			t.Errorf("toolshed %s: exit %d, stdout %q, stderr\n%s\nwant exit 2 and only\n%s", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestHelpHidesEnvironment checks that -h shows where a default comes from ($TOOLSHED_TOKEN),
// never the variable's value: a bearer token pasted into a bug report with the help.
func TestHelpHidesEnvironment(t *testing.T) {
	secrets := map[string]string{
		"TOOLSHED_TOKEN":      "tok-3f9a-not-for-help",
		"TOOLSHED_CONFIG":     "/secret/place/servers.json",
		"TOOLSHED_REPLICA_ID": "replica-not-for-help",
	}
	for env, v := range secrets {
		t.Setenv(env, v)
	}
	for _, c := range commands {
		var stdout, stderr bytes.Buffer
		run([]string{c.name, "-h"}, &stdout, &stderr)
		for env, v := range secrets {
			if strings.Contains(stdout.String()+stderr.String(), v) {
				t.Errorf("toolshed %s -h shows the value of $%s", c.name, env)
			}
		}
	}
}

// TestEnvDefaultStillApplies checks that a flag whose default is an environment variable
// takes the variable's value when the flag is not given, and the flag's when it is. Each
// command line stops at a check (exit 2) before anything starts: --drain-timeout 0s is
// refused after --replica-id is checked.
func TestEnvDefaultStillApplies(t *testing.T) {
	t.Setenv("TOOLSHED_REPLICA_ID", "Env.Replica")
	tests := []struct{ args, want string }{
		{"", `--replica-id (or $TOOLSHED_REPLICA_ID): `},    // the variable's value is checked
		{"--replica-id Flag.Replica", `got "Flag.Replica"`}, // the flag's instead
		{"--replica-id good-1", "--drain-timeout"},          // and passes
	}
	for _, tc := range tests {
		args := append([]string{"serve", "--http", "127.0.0.1:0", "--drain-timeout", "0s"}, strings.Fields(tc.args)...)
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || (tc.args != "") == strings.Contains(stderr.String(), "Env.Replica") {
			t.Errorf("$TOOLSHED_REPLICA_ID=Env.Replica toolshed %s: exit %d, stderr %q; want exit 2 naming %s", strings.Join(args, " "), code, stderr.String(), tc.want)
		}
	}
}

// TestWrap checks the wrapping of -h's text: at spaces, never inside brackets, a long
// word on a line of its own.
func TestWrap(t *testing.T) {
	tests := []struct {
		text  string
		width int
		want  []string
	}{
		{"a b c", 3, []string{"a b", "c"}},
		{"[--http ADDR] [--token TOKEN]", 16, []string{"[--http ADDR]", "[--token TOKEN]"}},
		{"[--embed-url URL --embed-model NAME] x", 10, []string{"[--embed-url URL --embed-model NAME]", "x"}},
		{"  two  spaces ", 80, []string{"two spaces"}},
		{"", 10, nil},
		{"déjà vu", 7, []string{"déjà vu"}},
	}
	for _, tc := range tests {
		if got := wrap(tc.text, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

// TestPrintUsageWithoutFlags checks the -h of a command that takes no flags and no
// arguments: its usage line is the command alone.
func TestPrintUsageWithoutFlags(t *testing.T) {
	var b bytes.Buffer
	printUsage(&b, flag.NewFlagSet("version", flag.ContinueOnError), "", "Prints the version.")
	want := "usage: toolshed version\n\nPrints the version.\n"
	if b.String() != want {
		t.Errorf("printUsage without flags printed\n%q\nwant\n%q", b.String(), want)
	}
}
