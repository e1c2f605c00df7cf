// Command toolshed keeps tool definitions out of an LLM's prompt and lets the model search
// for the few it needs. See the README for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

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
	fmt.Fprintln(w, "Run 'toolshed COMMAND -h' for a command's flags. Without --catalog, commands use the")
	fmt.Fprintln(w, "built-in catalog: the real tool lists of 21 public MCP servers.")
}

// usageErr builds a usage error.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// parseFlagsOnly parses fs from args for a command that takes no positional
// arguments.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	rest, err := parseFlags(fs, args, stderr)
	if err == nil && len(rest) > 0 {
		err = usageErr("unexpected arguments %q", rest)
	}
	return err
}

// parseFlags parses fs from args, allowing flags after positional arguments
// ("toolshed search github issue --limit 3"), and returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(stderr)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
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

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
