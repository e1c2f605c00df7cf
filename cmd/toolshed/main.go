// Command toolshed keeps tool definitions out of an LLM's prompt and lets the model search
// for the few it needs. docs/cli.md shows every command, its output and its flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/toolshed/toolshed/gateway/config"
)

// command is one subcommand: its name, a one-line summary, and what runs it.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"serve", "run the MCP gateway (stdio, or Streamable HTTP with --http)", runServe},
	{"proxy", "serve the Messages API with tool search in front of any model", runProxy},
	{"search", "search the catalog for tools (BM25, or --regex)", runSearch},
	{"describe", "print one tool's full definition", runDescribe},
	{"tokens", "what the catalog costs a model, with and without tool search", runTokens},
	{"eval", "measure retrieval quality and speed on a benchmark set", runEval},
	{"lint", "how findable and usable each tool is, and how to fix it", runLint},
	{"auth", "sign in to remote servers that ask for OAuth: login, status, logout", runAuth},
	{"stats", "how tool search served, from the search log: misses, ranking, errors, suggested overrides", runStats},
	{"version", "print toolshed's version, its Go version and source revision (also --version)", runVersion},
}

// errUsage marks errors whose message is a usage problem: exit status 2.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes a command line and returns the exit status: 0 success, 1 failure, 2 a
// command line or a config file that is wrong (config.ErrConfig says which configs are).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		// "toolshed help serve" is "toolshed serve -h", as it is for go and git.
		args = []string{args[1], "-h"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		// The flag, with one dash or two as Go's flag package reads flags.
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "toolshed %s: %v\n", c.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
			return 2
		default:
			fmt.Fprintf(stderr, "toolshed %s: %v\n", c.name, err)
			if errors.Is(err, config.ErrConfig) {
				return 2 // a config the user must fix, as a wrong command line
			}
			return 1
		}
	}
	fmt.Fprintf(stderr, "toolshed: unknown command %q; run 'toolshed help' for the list\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "toolshed: tool search for LLM agents with many tools")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: toolshed COMMAND [flags] [args]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'toolshed help COMMAND' or 'toolshed COMMAND -h' for a command's flags. Without")
	fmt.Fprintln(w, "--catalog, commands use the built-in catalog: the real tool lists of 21 public MCP servers.")
}

// usageErr builds a usage error.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// parseFlagsOnly parses fs from args for a command that takes no positional
// arguments.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	rest, err := parseFlags(fs, args)
	if err == nil && len(rest) > 0 {
		err = usageErr("unexpected arguments %q", rest)
	}
	return err
}

// seeFlags, when set, is given each command's FlagSet just before it is parsed. The docs
// tests read through it the flags every command defines, running each with -h, which
// stops at the parse before anything else runs.
var seeFlags func(*flag.FlagSet)

// parseFlags parses fs from args, allowing flags after positional arguments
// ("toolshed search github issue --limit 3"), and returns the positional arguments.
// -h and --help print fs.Usage (to stdout, where a pager or grep reads it) and return
// flag.ErrHelp. A wrong flag is a usage error that says where the flags are listed: the
// flag package's own report, the error and then the whole usage on stderr, buried the
// error under dozens of lines, and the caller printed the error a second time.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if seeFlags != nil {
		seeFlags(fs)
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v ('toolshed %s -h' lists its flags)", errUsage, err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// envDefault sets the flag p points at to the environment variable env before the
// command line is parsed, without making the variable's value the flag's default: -h
// shows the description's "(default $ENV)", never the value, which may be a token.
func envDefault(p *string, env string) *string {
	*p = os.Getenv(env)
	return p
}

// helpWidth is the width -h wraps its text at, a terminal's.
const helpWidth = 80

// printUsage writes a command's -h: the synopsis, which names every flag (the docs tests
// check it does), wrapped under "usage: toolshed NAME"; what the command does; and each
// flag with the value it takes, what it does and its default.
func printUsage(w io.Writer, fs *flag.FlagSet, synopsis, about string) {
	lead := "usage: toolshed " + fs.Name() + " "
	if synopsis == "" {
		fmt.Fprintln(w, strings.TrimSpace(lead)) // a command without flags or arguments
	}
	for i, line := range wrap(synopsis, helpWidth-len(lead)) {
		if i > 0 {
			lead = strings.Repeat(" ", len(lead))
		}
		fmt.Fprintln(w, lead+line)
	}
	if about != "" {
		fmt.Fprintln(w)
		for _, line := range wrap(about, helpWidth) {
			fmt.Fprintln(w, line)
		}
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if !hasFlags {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(w, "  -%s%s\n", f.Name, name)
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			text += " (default " + f.DefValue + ")"
		}
		for _, line := range wrap(text, helpWidth-8) {
			fmt.Fprintln(w, "        "+line)
		}
	})
}

// wrap breaks text into lines of at most width characters at spaces, never inside
// brackets, so that a synopsis keeps "[--http ADDR]" on one line. A word longer than
// width has a line of its own.
func wrap(text string, width int) []string {
	var words []string
	depth, start := 0, 0
	for i, r := range text {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ' ':
			if depth == 0 {
				if i > start {
					words = append(words, text[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(text) {
		words = append(words, text[start:])
	}
	var lines []string
	var cur strings.Builder
	for _, word := range words {
		if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
