package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
)

func runDescribe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "look the tool up in catalog `FILE` (repeatable; default: the built-in catalog)")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--catalog FILE]... NAME",
			"Prints the definition of tool NAME, qualified (github__create_issue) or bare when one server has it, with its schemas as its server sent them.")
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr("give one tool NAME, qualified (github__create_issue) or bare when one server has it (create_issue)")
	}
	snap, err := loadCatalog(catalogs, stderr)
	if err != nil {
		return err
	}
	t, err := snap.Lookup(rest[0], nil)
	if err != nil {
		if errors.Is(err, catalog.ErrUnknownTool) {
			return fmt.Errorf("no tool named %q in the catalog; find names with: toolshed search WORDS", rest[0])
		}
		return err
	}
	return writeJSON(stdout, bridge.Describe(t))
}
