package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/golden"
)

// timing matches the figures that change from run to run (durations), so golden files
// hold everything else exactly.
var timing = regexp.MustCompile(`("(p50_us|p99_us|build_ms)": )[0-9.]+|[0-9]+(\.[0-9]+)? (ms|µs)`)

func TestCommands(t *testing.T) {
	tests := []struct {
		name string
		args string
		code int
	}{
		{"help", "help", 0},
		{"no-args", "", 2},
		{"unknown-command", "frobnicate", 2},
		{"search", "search create a github issue", 0},
		{"search-flags-after-query", "search read a file --limit 3", 0},
		{"search-json", "search --json --limit 3 take a screenshot of the page", 0},
		{"search-regex", "search --regex ^slack_ --limit 4", 0},
		{"search-regex-lookbehind", "search --regex (?<=x)y", 1},
		{"search-regex-invalid", "search --regex --json (abc", 1},
		{"search-no-query", "search", 2},
		{"search-bad-limit", "search --limit 0 weather", 2},
		{"search-small-catalog", "search --catalog testdata/small.json weather forecast for Paris", 0},
		{"search-no-match", "search --catalog testdata/small.json zzzqqq", 0},
		{"search-substring", "search --catalog testdata/small.json ecas", 0},
		{"search-typo", "search --catalog testdata/small.json wether forcast", 0},
		{"search-missing-catalog", "search --catalog testdata/missing.json weather", 1},
		{"search-not-json-catalog", "search --catalog testdata/notjson.json --catalog testdata/small.json alerts", 0},
		{"describe", "describe github__create_issue", 0},
		{"describe-bare", "describe --catalog testdata/small.json get_alerts", 0},
		{"describe-ambiguous", "describe create_issue", 1},
		{"describe-unknown", "describe no_such_tool", 1},
		{"tokens", "tokens --top 5", 0},
		{"tokens-small-json", "tokens --catalog testdata/small.json --json", 0},
		{"tokens-small-unknown-window", "tokens --catalog testdata/small.json --context-window 0", 0},
		{"tokens-bad-window", "tokens --context-window -1", 2},
		{"tokens-settings-config", "tokens --catalog testdata/small.json --config testdata/tokens-settings.yaml", 0},
		{"eval", "eval --catalog testdata/small.json --queries testdata/small-queries.jsonl", 0},
		{"eval-json", "eval --catalog testdata/small.json --queries testdata/small-queries.jsonl --json", 0},
		{"eval-misses", "eval --catalog testdata/small.json --queries testdata/small-queries.jsonl --misses", 0},
		{"eval-missing-queries", "eval --catalog testdata/small.json", 2},
		{"eval-learn", "eval --catalog testdata/learn.json --queries testdata/learn-queries.jsonl --learn-split 0.5", 0},
		{"eval-learn-json", "eval --catalog testdata/learn.json --queries testdata/learn-queries.jsonl --learn-split 0.5 --json", 0},
		{"eval-learn-bad-split", "eval --catalog testdata/learn.json --queries testdata/learn-queries.jsonl --learn-split 1", 2},
		{"eval-learn-misses", "eval --catalog testdata/learn.json --queries testdata/learn-queries.jsonl --learn-split 0.5 --misses", 2},
		{"lint", "lint", 0},
		{"lint-reference", "lint --catalog ../../internal/builtin/catalogs/reference-servers.json", 0},
		{"lint-reference-json", "lint --json --catalog ../../internal/builtin/catalogs/reference-servers.json", 0},
		{"lint-reference-strict", "lint --strict --top-tokens 0 --catalog ../../internal/builtin/catalogs/reference-servers.json --json", 0},
		{"lint-bad", "lint --catalog testdata/lint-bad.json --catalog testdata/small.json", 0},
		{"lint-bad-strict", "lint --strict --json --catalog testdata/lint-bad.json", 1},
		{"lint-missing-catalog", "lint --catalog testdata/missing.json", 1},
		{"lint-not-json-catalog", "lint --catalog testdata/small.json --catalog testdata/notjson.json", 1},
		{"lint-catalog-and-config", "lint --catalog testdata/small.json --config testdata/serve-profiles.yaml", 2},
		{"lint-extra-args", "lint github", 2},
		{"lint-missing-config", "lint --config testdata/missing.yaml", 2},
		{"serve-bad-max-sessions", "serve --max-sessions 0", 2},
		{"serve-bad-max-sessions-per-token", "serve --max-sessions-per-token -2", 2},
		{"serve-bad-max-listens", "serve --max-listens 0", 2},
		{"serve-bad-max-listens-per-token", "serve --max-listens-per-token -3", 2},
		{"proxy-bad-kind", "proxy --upstream-kind gemini", 2},
		{"proxy-bad-listen", "proxy --listen 127.0.0.1:notaport", 2},
		{"proxy-extra-args", "proxy now", 2},
		{"proxy-bad-iterations", "proxy --max-iterations -1", 2},
		{"proxy-bad-max-answer", "proxy --max-answer-mib 0", 2},
		{"proxy-bad-tool-cache", "proxy --tool-cache-mib -5", 2},
		{"proxy-bad-drain", "proxy --drain-timeout 0s", 2},
		{"proxy-bad-client-search", "proxy --client-search maybe", 2},
		{"proxy-catalog-and-config", "proxy --catalog testdata/small.json --config testdata/serve-profiles.yaml", 2},
		{"proxy-missing-catalog", "proxy --catalog testdata/missing.json --listen 127.0.0.1:0", 1},
		{"serve-bad-drain", "serve --drain-timeout -1s", 2},
		{"serve-bad-start-wait", "serve --start-wait 0s", 2},
		{"serve-bad-memory-target", "serve --memory-target-mib -1", 2},
		{"serve-stateless-stdio", "serve --stateless", 2},
		{"serve-bad-replica-id", "serve --http 127.0.0.1:0 --replica-id Toolshed.1", 2},
		{"serve-bad-http", "serve --config testdata/serve-profiles.yaml --http abc", 2},
		{"serve-unknown-profile", "serve --config testdata/serve-profiles.yaml --profile nope", 2},
		{"serve-unknown-profile-no-profiles", "serve --profile nope", 2},
		{"serve-profile-with-http", "serve --config testdata/serve-profiles.yaml --profile admin --http 127.0.0.1:0", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkCommand(t, tc.name, tc.args, tc.code) })
	}
}

// checkCommand runs the command line args (split at spaces), checks its exit status, and
// compares what it printed with testdata/NAME.golden, timings masked.
func checkCommand(t *testing.T, name, args string, want int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(strings.Fields(args), &stdout, &stderr)
	if code != want {
		t.Errorf("toolshed %s: exit %d, want %d\nstderr: %s", args, code, want, stderr.String())
	}
	got := fmt.Sprintf("$ toolshed %s\n# exit %d\n# stdout\n%s# stderr\n%s", args, code, stdout.String(), stderr.String())
	got = timing.ReplaceAllString(got, "${1}<time>")
	golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(got))
}
