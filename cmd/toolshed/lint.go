package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/lint"
)

// errFindings is returned by lint --strict when there are error-level findings: exit 1,
// after the report.
var errFindings = errors.New("error-level findings")

func runLint(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "lint the tools of catalog `FILE` (repeatable; default: the built-in catalog)")
	configFile := fs.String("config", "", "lint the tools the gateway serves with config `FILE`, overrides applied (starts its servers)")
	asJSON := fs.Bool("json", false, "print JSON")
	strict := fs.Bool("strict", false, "exit 1 when there is any error-level finding (warnings and notes do not count)")
	top := fs.Int("top-tokens", 5, "report the `N` costliest definitions (0: none)")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--catalog FILE... | --config FILE] [--json] [--strict] [--top-tokens N]",
			"Reports how findable and usable every tool is; each finding says how to fix it.")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if len(catalogs) > 0 && *configFile != "" {
		return usageErr("give --catalog or --config, not both")
	}
	if *top < 0 {
		return usageErr("--top-tokens must be 0 or more, got %d", *top)
	}
	var (
		snap     *catalog.Snapshot
		problems []catalog.Problem
		err      error
	)
	var extra []lint.Finding
	switch {
	case *configFile != "":
		// The config's embed section is checked first: a mistake in it is an error
		// that says what to fix, before any server starts.
		cfg, lerr := loadServersConfig(*configFile, stderr)
		if lerr != nil {
			return lerr
		}
		extra = checkEmbed(context.Background(), cfg.Embed)
		snap, err = configCatalog(context.Background(), cfg, *configFile, "linted", stderr)
		if err == nil && len(extra) > 0 && extra[0].Severity == lint.Info {
			// The endpoint answers: does the model help on these tools?
			extra = append(extra, embedGain(context.Background(), cfg.Embed, cfg.SearchLog.DB, snap, stderr)...)
		}
	case len(catalogs) > 0:
		snap, problems, err = lintFiles(catalogs)
	default:
		snap, problems = builtin.Snapshot()
	}
	if err != nil {
		return err
	}
	n := *top
	if n == 0 {
		n = -1
	}
	report := lint.Run(snap, problems, lint.Options{TopTokens: n, Extra: extra})
	if *asJSON {
		err = writeJSON(stdout, report)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if *strict && report.Errors > 0 {
		return fmt.Errorf("%w: %d (--strict fails on errors only)", errFindings, report.Errors)
	}
	return nil
}

// lintFiles reads catalog files for lint: a file that cannot be read or parsed at all
// is an error (there is nothing to lint); problems with single tools or servers become
// findings.
func lintFiles(files []string) (*catalog.Snapshot, []catalog.Problem, error) {
	var sources []catalog.Source
	var problems []catalog.Problem
	for _, f := range files {
		srcs, ps := catalog.ReadFile(f)
		for _, p := range ps {
			if p.Server == "" && p.Tool == "" {
				return nil, nil, p
			}
		}
		sources = append(sources, srcs...)
		problems = append(problems, ps...)
	}
	snap, ps := catalog.Build(sources)
	return snap, append(problems, ps...), nil
}

// embedProbeTimeout bounds lint's embedding of one short text: generous, since a local
// model may be loading.
const embedProbeTimeout = 30 * time.Second

// checkEmbed embeds one short text with the config's embedding endpoint, as search
// would embed a query, and says whether it answered: an endpoint that does not is an
// error finding (search would use words alone), one that does a note of what it gave.
func checkEmbed(ctx context.Context, e config.Embed) []lint.Finding {
	if !e.On() {
		return nil
	}
	key := os.Getenv(e.APIKeyEnv)
	c, err := configEmbedClient(e)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, embedProbeTimeout)
		defer cancel()
		var v []float32
		if v, err = c.Query(ctx, "find a tool"); err == nil {
			return []lint.Finding{{Severity: lint.Info, Check: lint.CheckEmbed,
				Message: fmt.Sprintf("the embedding model %s at %s answers with %d dimensions; search fuses words with it", e.Model, c.Endpoint(), len(v)),
				Fix:     "nothing to fix; compare toolshed eval with and without --embed-url to measure the gain"}}
		}
	}
	shown := "in the config" // the URL may carry a key as its password: shown only as the client shows it
	if c != nil {
		shown = c.Endpoint()
	}
	fix := "start the model server, or correct embed.url and embed.model in the config; until it answers, search uses words alone"
	if key == "" {
		fix += fmt.Sprintf(" (no key: $%s is empty, if the endpoint needs one)", e.APIKeyEnv)
	}
	return []lint.Finding{{Severity: lint.Error, Check: lint.CheckEmbed,
		Message: fmt.Sprintf("the embedding endpoint %s (model %s) does not answer: %v", shown, e.Model, err), Fix: fix}}
}

// configEmbedClient is the client of the config's embedding endpoint, its key from the
// environment variable the config names.
func configEmbedClient(e config.Embed) (*embed.Client, error) {
	return embed.New(embed.Options{URL: e.URL, Model: e.Model, Dimensions: e.Dimensions, QueryPrefix: e.QueryPrefix, DocumentPrefix: e.DocumentPrefix, APIKey: os.Getenv(e.APIKeyEnv)})
}
