package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/policy"
)

// unsetenv removes name from the environment for the rest of the test.
func unsetenv(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Setenv(name, "") // restores the old value when the test ends
		os.Unsetenv(name)
	}
}

func mustParse(t *testing.T, src string) (*Config, []Warning) {
	t.Helper()
	cfg, warns, err := Parse([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg, warns
}

func serverNames(cfg *Config) []string {
	var out []string
	for _, s := range cfg.Servers {
		out = append(out, s.Name)
	}
	return out
}

func server(t *testing.T, cfg *Config, name string) Server {
	t.Helper()
	for _, s := range cfg.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q in %v", name, serverNames(cfg))
	return Server{}
}

// hasWarning reports whether a warning has exactly key and a message containing every
// one of parts.
func hasWarning(warns []Warning, key string, parts ...string) bool {
	for _, w := range warns {
		if w.Key != key {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w.Message, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func wantWarning(t *testing.T, warns []Warning, key string, parts ...string) {
	t.Helper()
	if !hasWarning(warns, key, parts...) {
		t.Errorf("no warning %s containing %q; got:\n%s", key, parts, warningList(warns))
	}
}

func wantNoWarnings(t *testing.T, warns []Warning) {
	t.Helper()
	if len(warns) > 0 {
		t.Errorf("unexpected warnings:\n%s", warningList(warns))
	}
}

func warningList(warns []Warning) string {
	var b strings.Builder
	for _, w := range warns {
		b.WriteString("  " + w.String() + "\n")
	}
	return b.String()
}

func bptr(b bool) *bool { return &b }

func TestLoadClaudeDesktop(t *testing.T) {
	cfg, warns, err := Load("testdata/claude_desktop_config.json")
	if err != nil {
		t.Fatal(err)
	}
	wantNoWarnings(t, warns)
	if got, want := serverNames(cfg), []string{"filesystem", "github", "brave-search", "sqlite", "memory"}; !slices.Equal(got, want) {
		t.Errorf("servers = %v, want %v", got, want)
	}
	want := Server{
		Name: "github", Type: Stdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-github"},
		Env:  map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"},
	}
	if got := server(t, cfg, "github"); !reflect.DeepEqual(got, want) {
		t.Errorf("github = %+v\nwant %+v", got, want)
	}
	fs := server(t, cfg, "filesystem")
	if len(fs.Args) != 4 || fs.Args[3] != "/Users/alice/Downloads" || fs.Env != nil {
		t.Errorf("filesystem = %+v", fs)
	}
	if cfg.ToolSearch != policy.DefaultConfig() || cfg.ContextWindow != DefaultContextWindow {
		t.Errorf("defaults: tool search %+v, context window %d", cfg.ToolSearch, cfg.ContextWindow)
	}
	if cfg.Profiles != nil || !reflect.DeepEqual(cfg.Hooks, Hooks{}) || cfg.RateLimit != (RateLimit{}) {
		t.Errorf("settings not zero: %+v %+v %+v", cfg.Profiles, cfg.Hooks, cfg.RateLimit)
	}
}

func TestLoadCursor(t *testing.T) {
	t.Setenv("CONTEXT7_API_KEY", "ctx7-secret")
	cfg, warns, err := Load("testdata/cursor/.cursor/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	wantNoWarnings(t, warns)
	if got, want := serverNames(cfg), []string{"sentry", "context7", "linear", "postgres", "notes"}; !slices.Equal(got, want) {
		t.Errorf("servers = %v, want %v", got, want)
	}
	if s := server(t, cfg, "sentry"); s.Type != HTTP || s.URL != "https://mcp.sentry.dev/mcp" {
		t.Errorf("sentry = %+v", s)
	}
	if s := server(t, cfg, "context7"); s.Headers["CONTEXT7_API_KEY"] != "ctx7-secret" {
		t.Errorf("context7 headers = %v", s.Headers)
	}
	if s := server(t, cfg, "postgres"); s.Env == nil || len(s.Env) != 0 {
		t.Errorf("postgres env = %#v, want empty", s.Env)
	}
	// ${workspaceFolder} is the folder holding .cursor.
	abs, _ := filepath.Abs("testdata/cursor")
	notes := server(t, cfg, "notes")
	if !notes.Disabled || notes.Args[0] != filepath.Join(abs, "tools", "notes-server.js") {
		t.Errorf("notes = %+v", notes)
	}
}

func TestLoadClaudeCode(t *testing.T) {
	t.Setenv("API_KEY", "k-123")
	unsetenv(t, "API_BASE_URL", "CONFIG_PATH", "DB_URL")
	cfg, warns, err := Load("testdata/claude_code.mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	api := server(t, cfg, "api-server")
	if api.Type != HTTP || api.URL != "https://api.example.com/mcp" || api.Headers["Authorization"] != "Bearer k-123" {
		t.Errorf("api-server = %+v", api)
	}
	if s := server(t, cfg, "asana"); s.Type != SSE || s.URL != "https://mcp.asana.com/sse" {
		t.Errorf("asana = %+v", s)
	}
	db := server(t, cfg, "local-db")
	if db.Type != Stdio || !slices.Equal(db.Args, []string{"--config", "./db.json"}) || db.Env["DB_URL"] != "" {
		t.Errorf("local-db = %+v", db)
	}
	if !server(t, cfg, "playwright").AlwaysLoad {
		t.Error("playwright: alwaysLoad not read")
	}
	// DB_URL has no default: a warning naming the variable, the server and the key.
	if len(warns) != 1 {
		t.Errorf("want 1 warning, got:\n%s", warningList(warns))
	}
	wantWarning(t, warns, "mcpServers.local-db.env.DB_URL", "DB_URL is not set", "${DB_URL:-default}")

	t.Setenv("API_BASE_URL", "https://staging.example.com")
	t.Setenv("DB_URL", "postgres://db")
	cfg, warns, err = Load("testdata/claude_code.mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	wantNoWarnings(t, warns)
	if got := server(t, cfg, "api-server").URL; got != "https://staging.example.com/mcp" {
		t.Errorf("url = %q", got)
	}
}

func TestLoadVSCode(t *testing.T) {
	cfg, warns, err := Load("testdata/vscode/.vscode/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := serverNames(cfg), []string{"Perplexity", "fetch", "github", "playwright"}; !slices.Equal(got, want) {
		t.Errorf("servers = %v, want %v", got, want)
	}
	p := server(t, cfg, "Perplexity")
	if p.Env["PERPLEXITY_API_KEY"] != "" || p.Env["AWS_REGION"] != "eu-west-1" {
		t.Errorf("Perplexity env = %v", p.Env)
	}
	wantWarning(t, warns, "servers.Perplexity.env.PERPLEXITY_API_KEY", "${input:perplexity-key}", "cannot prompt", `expands to ""`)
	wantWarning(t, warns, "servers.Perplexity.env.AWS_REGION", "${input:region}", "using the input's default")
	if len(warns) != 2 {
		t.Errorf("want 2 warnings, got:\n%s", warningList(warns))
	}
	if s := server(t, cfg, "github"); s.Type != HTTP || s.URL != "https://api.githubcopilot.com/mcp/" {
		t.Errorf("github = %+v", s)
	}
	// envFile is read relative to the workspace (the folder holding .vscode); env wins.
	ws, _ := filepath.Abs("testdata/vscode")
	pw := server(t, cfg, "playwright")
	wantEnv := map[string]string{
		"PLAYWRIGHT_BROWSER":  "firefox",
		"PLAYWRIGHT_HEADLESS": "true",
		"GREETING":            "hello\nworld",
		"LITERAL":             "a $b",
		"TRAILING":            "value",
	}
	if !reflect.DeepEqual(pw.Env, wantEnv) || pw.Cwd != ws {
		t.Errorf("playwright env = %v, cwd = %q (want %q)", pw.Env, pw.Cwd, ws)
	}
}

func TestLoadToolshedYAML(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_abc")
	t.Setenv("OPS_TOKEN", "ops-secret")
	unsetenv(t, "SLACK_TOKEN", "TOOLSHED_LOG_DIR")
	cfg, warns, err := Load("testdata/toolshed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantNoWarnings(t, warns)
	want := &Config{
		Servers: []Server{
			{
				Name: "github", Type: Stdio, Command: "npx",
				Args:           []string{"-y", "@modelcontextprotocol/server-github"},
				Env:            map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_abc"},
				Cwd:            "/srv/mcp",
				ConnectTimeout: 45 * time.Second,
				CallTimeout:    90 * time.Second,
				Rules: policy.ServerRules{
					DefaultConfig: policy.ToolConfig{DeferLoading: bptr(true)},
					Configs: map[string]policy.ToolConfig{
						"search_code":       {DeferLoading: bptr(false)},
						"delete_repository": {Enabled: bptr(false)},
					},
				},
			},
			{
				Name: "slack", Type: HTTP, URL: "https://mcp.slack.example.com/mcp",
				Headers:    map[string]string{"Authorization": "Bearer xoxb-test"},
				AlwaysLoad: true,
			},
			{Name: "sentry", Type: SSE, URL: "https://mcp.sentry.dev/sse", Disabled: true},
			{
				Name: "grafana", Type: Stdio, Command: "uvx", Args: []string{"mcp-grafana"},
				Env:         map[string]string{"GRAFANA_URL": "http://localhost:3000"},
				CallTimeout: 2 * time.Minute,
				Rules: policy.ServerRules{
					DefaultConfig: policy.ToolConfig{Enabled: bptr(false)},
					Configs: map[string]policy.ToolConfig{
						"search_dashboards": {Enabled: bptr(true)},
						"query_prometheus":  {Enabled: bptr(true)},
					},
				},
			},
		},
		ToolSearch:    policy.Config{Enabled: policy.Auto, ThresholdPct: 5, SearchDefaultLimit: 8, MaxSearchLimit: 30, ListingTokens: 200},
		ContextWindow: 1_000_000,
		Profiles: map[string]Profile{
			"ops":      {Scope: policy.Scope{Servers: []string{"grafana", "sentry"}, Tools: []string{"github__list_*"}}, Token: "ops-secret"},
			"dev":      {Scope: policy.Scope{Servers: []string{"git*"}}, Token: "dev-token-123"},
			"readonly": {Scope: policy.Scope{Tools: []string{"*__get_*", "*__list_*", "*__search_*"}}},
		},
		Hooks: Hooks{
			Allow:              []string{"*"},
			Deny:               []string{"github__delete_*", "*__drop_table"},
			Approve:            []string{"slack__post_message"},
			ApproveDestructive: true,
			SecretFields:       []string{"password", "api_key", "token"},
			ActivityLog:        "/var/log/toolshed/activity.jsonl",
		},
		RateLimit: RateLimit{CallsPerMinute: 120, Burst: 20},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
		for i := range min(len(cfg.Servers), len(want.Servers)) {
			if !reflect.DeepEqual(cfg.Servers[i], want.Servers[i]) {
				t.Errorf("server %d:\n got  %+v\n want %+v", i, cfg.Servers[i], want.Servers[i])
			}
		}
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // substrings of the error
	}{
		{"empty", "", []string{"test.yaml is empty", "mcpServers"}},
		{"json comments only", "// nothing yet\n/* later */", []string{"test.json is empty"}},
		{"yaml in a .json file", "mcpServers: {}\n", []string{"test.json:1:1: not valid JSON", "invalid character 'm'"}},
		{"blank", "  \n\t\n", []string{"is empty"}},
		{"only comments", "# nothing yet\n", []string{"is empty"}},
		{"not yaml", "mcpServers: [1, 2\n", []string{"test.yaml is not valid YAML or JSON", "line 1", "fix the syntax"}},
		{"json missing comma", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", []string{"test.json:4:5: not valid JSON", "after object key:value pair"}},
		{"json cut short", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}", []string{"test.json:1:", "not valid JSON", "unexpected end"}},
		{"json bad value", "{\n\"mcpServers\": {\"a\": {\"command\": nope}}}", []string{"test.json:2:34: not valid JSON", "invalid character 'o'"}},
		{"unterminated comment", "{\"mcpServers\": {} /* oops\n}", []string{"test.json:1:19: not valid JSON"}},
		{"top-level list", "[1, 2]", []string{"the document is a list, not a mapping"}},
		{"top-level scalar", "hello", []string{"the document is the value \"hello\", not a mapping"}},
		{"empty object", "{}", []string{"has no servers and no toolshed settings"}},
		{"empty servers", "mcpServers: {}\n", []string{"has no servers"}},
		{"null servers", "mcpServers:\n", []string{"has no servers"}},
		{"only inputs", `{"inputs": [], "$schema": "x"}`, []string{"has no servers"}},
		{"only unknown keys", "mcp: {a: {command: x}}\n", []string{"has no servers"}},
		// Servers listed, none usable: nothing to serve, and the error says why each
		// cannot be used.
		{"only server broken", `{"mcpServers": {"x": {"command": 5}}}`, []string{"test.json: its one server cannot be used, so there is nothing to serve", "mcpServers.x.command: is the number 5, not a string", "in quotes"}},
		{"every server broken", "mcpServers: {a: {args: [x]}, b: {url: ftp://x}}\n", []string{"test.yaml: none of its 2 servers can be used", "mcpServers.a: has neither command nor url", `mcpServers.b.url: "ftp://x" is not an http:// or https:// address`}},
		{"every server broken, with settings", "tools: {tool_search: on}\nmcpServers: {a: {command: [x]}}\n", []string{"its one server cannot be used", "mcpServers.a.command: is a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "test.yaml"
			if strings.HasPrefix(tt.src, "{") || strings.HasPrefix(tt.src, "[") || strings.HasPrefix(tt.src, "//") || tt.name == "yaml in a .json file" {
				name = "test.json"
			}
			cfg, _, err := Parse([]byte(tt.src), name)
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("config %+v returned with error", cfg)
			}
			if !errors.Is(err, ErrConfig) || !errors.Is(err, policy.ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFileErrorKeepsWarnings(t *testing.T) {
	_, warns, err := Parse([]byte("mcp: {a: {command: x}}\n"), "x.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	wantWarning(t, warns, "mcp", "unknown setting")
}

// A file whose servers are all unusable keeps its other warnings with the error, but
// not the servers' own: they are the error, and they would say "the other servers still
// load" of none.
func TestNoUsableServerWarnings(t *testing.T) {
	_, warns, err := Parse([]byte(`{"mcpServers": {"x": {"command": 5, "colour": "red"}}, "tols": {}}`), "x.json")
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "mcpServers.x.command: is the number 5") {
		t.Fatalf("err = %v", err)
	}
	wantWarning(t, warns, "tols", "unknown setting")
	wantWarning(t, warns, "mcpServers.x.colour", "unknown setting")
	if hasWarning(warns, "mcpServers.x.command", "") {
		t.Errorf("the error's reason is a warning too: %v", warns)
	}
}

func TestCheckServers(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the error; none for no error
	}{
		{"one server", "mcpServers: {a: {command: x}}\n", nil},
		{"one of two disabled", "mcpServers: {a: {command: x, disabled: true}, b: {command: y}}\n", nil},
		{"settings only", "tools: {tool_search: on}\n", []string{"x.yaml lists no servers", "under mcpServers"}},
		{"empty servers and settings", "mcpServers: {}\ntools: {tool_search: on}\n", []string{"x.yaml lists no servers"}},
		{"every server disabled", "mcpServers: {a: {command: x, disabled: true}, b: {command: y, enabled: false}}\n", []string{"x.yaml disables every server it lists (a, b)", "remove its disabled: true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := mustParse(t, tc.src)
			err := cfg.CheckServers("x.yaml")
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig and fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "missing.json") || !strings.Contains(err.Error(), "check the path") {
		t.Errorf("err = %v", err)
	}
	_, _, err = Load(t.TempDir()) // a directory
	if !errors.Is(err, ErrConfig) {
		t.Errorf("directory: err = %v", err)
	}
}

func TestNotErrors(t *testing.T) {
	tests := []struct{ name, src string }{
		{"settings only", "tools:\n  tool_search: on\n"},
		{"hooks only", "hooks: {deny: [\"*__delete_*\"]}\n"},
		{"yaml flow mapping", "{mcpServers: {a: {command: x}}}"},
		{"yaml flow mapping with unquoted value", `{"mcpServers": {"a": {"command": nope}}}`},
		{"BOM", "\ufeff{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Parse([]byte(tt.src), "x"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServerErrors checks that each problem leaves out only the server it is in, with a
// warning saying where and what to do.
func TestServerErrors(t *testing.T) {
	unsetenv(t, "NOPE_CMD")
	tests := []struct {
		name  string
		entry string // the bad server, as a YAML flow mapping (or other value)
		key   string // the warning key, under mcpServers.bad
		want  []string
	}{
		{"neither command nor url", `{args: [x]}`, "", []string{"has neither command nor url", "give a command"}},
		{"both command and url", `{command: x, url: "https://x"}`, "", []string{"has both command and url", "set type"}},
		{"ftp url", `{url: "ftp://example.com/mcp"}`, ".url", []string{`"ftp://example.com/mcp" is not an http:// or https:// address`}},
		{"url without host", `{url: "https://"}`, ".url", []string{"is not an http:// or https:// address"}},
		{"url password redacted", `{url: "ftp://me:s3cret@example.com"}`, ".url", []string{`"ftp://me:xxxxx@example.com" is not`}},
		{"url unparseable", `{url: "http://[::1"}`, ".url", []string{"is not an http:// or https:// address"}},
		{"url key redacted", `{url: "ftp://example.com/mcp?api_key=s3cret"}`, ".url", []string{`"ftp://example.com/mcp?api_key=xxxxx" is not`}},
		{"url unparseable, password redacted", `{url: "http://me:s3cret@[::1/mcp"}`, ".url", []string{`"http://me:xxxxx@[::1/mcp" is not`}},
		{"url not a string", `{url: [a]}`, ".url", []string{"is a list, not a string"}},
		{"bad type", `{type: websocket, url: "wss://x"}`, ".type", []string{`"websocket" is not a transport`, "stdio", "http", "sse"}},
		{"type not a string", `{type: {a: 1}, command: x}`, ".type", []string{"write stdio, http or sse"}},
		{"stdio without command", `{type: stdio, url: "https://x"}`, "", []string{"has type stdio but no command"}},
		{"http without url", `{type: http, command: x}`, "", []string{"has type http but no url"}},
		{"sse without url", `{type: sse}`, "", []string{"has type sse but no url"}},
		{"negative timeout", `{command: x, connect_timeout: -5}`, ".connect_timeout", []string{`"-5" is negative`, `"30s"`}},
		{"negative duration", `{command: x, call_timeout: -1s}`, ".call_timeout", []string{"is negative"}},
		{"unparseable timeout", `{command: x, call_timeout: soon}`, ".call_timeout", []string{`"soon" is not a duration`, "number of seconds"}},
		{"timeout alias", `{command: x, timeout: forever}`, ".timeout", []string{"is not a duration"}},
		{"huge timeout", `{command: x, timeout: 1e300}`, ".timeout", []string{"is too long"}},
		{"timeout a list", `{command: x, timeout: [1]}`, ".timeout", []string{"a list is not a duration"}},
		{"unknown protocol", `{command: x, protocol: "2026-07-28"}`, ".protocol", []string{`"2026-07-28" is not a protocol setting`, "auto", "legacy"}},
		{"protocol not a string", `{command: x, protocol: [legacy]}`, ".protocol", []string{"is a list", "write auto or legacy"}},
		{"not a mapping", `[command, x]`, "", []string{"is a list, not a mapping"}},
		{"no settings", ``, "", []string{"has no settings"}},
		{"args not a list", `{command: x, args: "-y pkg"}`, ".args", []string{"is the value \"-y pkg\", not a list", "[\"-y\""}},
		{"args item not a string", `{command: x, args: [a, {b: c}]}`, ".args[1]", []string{"is a mapping, not a string"}},
		{"env not a mapping", `{command: x, env: [A=1]}`, ".env", []string{"is a list, not a mapping", "NAME: value"}},
		{"env value not a string", `{command: x, env: {A: [1]}}`, ".env.A", []string{"is a list, not a string"}},
		{"env name with =", `{command: x, env: {"A=B": "1"}}`, ".env.A=B", []string{"not a usable environment variable name"}},
		{"headers not a mapping", `{url: "https://x", headers: "Authorization: x"}`, ".headers", []string{"not a mapping"}},
		{"header name with space", `{url: "https://x", headers: {"X Token": "1"}}`, ".headers.X Token", []string{"not a usable header name"}},
		{"header value with newline", `{url: "https://x", headers: {"X-Token": "a\nb"}}`, ".headers.X-Token", []string{"line break"}},
		{"command empty after expansion", `{command: "${NOPE_CMD}"}`, ".command", []string{"is empty (after expanding variables)"}},
		{"url empty", `{url: ""}`, ".url", []string{"is empty"}},
		{"command not a string", `{command: [npx, -y]}`, ".command", []string{"not a string", "args"}},
		{"cwd not a string", `{command: x, cwd: [a]}`, ".cwd", []string{"not a string"}},
		{"command a number", `{command: 5}`, ".command", []string{"is the number 5, not a string", "program to run", "in quotes"}},
		{"command a float", `{command: 1.5, args: [x]}`, ".command", []string{"is the number 1.5, not a string"}},
		{"command a boolean", `{command: true}`, ".command", []string{"is the boolean true, not a string"}},
		{"url a number", `{url: 8080}`, ".url", []string{"is the number 8080, not a string", "server's address"}},
		{"cwd a number", `{command: x, cwd: 0}`, ".cwd", []string{"is the number 0, not a string"}},
		{"args not a list, a number", `{command: x, args: 5}`, ".args", []string{"is the number 5, not a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "mcpServers:\n  first: {command: one}\n  bad: " + tt.entry + "\n  last: {url: \"https://last.example.com/mcp\"}\n"
			cfg, warns := mustParse(t, src)
			if got := serverNames(cfg); !slices.Equal(got, []string{"first", "last"}) {
				t.Errorf("servers = %v, want [first last]", got)
			}
			wantWarning(t, warns, "mcpServers.bad"+tt.key, append(tt.want, `Server "bad" is left out; the other servers still load`)...)
		})
	}
}

// TestNotStringsJSON checks the JSON form of TestServerErrors' numbers and booleans,
// where a number cannot be a string written without quotes: the server is left out
// with a warning naming it and the field, and arguments are taken as written.
func TestNotStringsJSON(t *testing.T) {
	src := `{"mcpServers": {"five": {"command": 5}, "flag": {"command": "x", "cwd": true}, "ok": {"command": "npx", "args": ["--port", 8080, 1.50, true]}}}`
	cfg, warns, err := Parse([]byte(src), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(cfg); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("servers = %v, want [ok]", got)
	}
	wantWarning(t, warns, "mcpServers.five.command", "is the number 5, not a string", `Server "five" is left out`)
	wantWarning(t, warns, "mcpServers.flag.cwd", "is the boolean true, not a string", `Server "flag" is left out`)
	if got := cfg.Servers[0].Args; !slices.Equal(got, []string{"--port", "8080", "1.50", "true"}) {
		t.Errorf("args = %q, want them as written", got)
	}
}

func TestServerNames(t *testing.T) {
	cfg, warns := mustParse(t, `{"mcpServers": {
		"github__mirror": {"command": "x"},
		"My Server": {"command": "y"},
		"My-Server": {"command": "z"},
		"ok": {"command": "w"}}}`)
	if got := serverNames(cfg); !slices.Equal(got, []string{"My-Server", "ok"}) {
		t.Errorf("servers = %v", got)
	}
	wantWarning(t, warns, "mcpServers.github__mirror", `contains "__"`, "rename it", "SERVER__TOOL", "left out")
	wantWarning(t, warns, "mcpServers.My Server", `its tools are named My-Server__TOOL`)
	wantWarning(t, warns, "mcpServers.My-Server", `"My-Server" is already used by mcpServers.My Server`, "left out")
	if s := server(t, cfg, "My-Server"); s.Command != "y" {
		t.Errorf("the first of two servers with one name should win; got %+v", s)
	}
}

func TestOrder(t *testing.T) {
	want := []string{"zeta", "alpha", "mike", "bravo", "yankee", "charlie", "x-ray", "delta"}
	var yamlSrc, jsonSrc strings.Builder
	yamlSrc.WriteString("mcpServers:\n")
	jsonSrc.WriteString(`{"mcpServers": {`)
	for i, n := range want[:4] {
		yamlSrc.WriteString("  " + n + ": {command: " + n + "}\n")
		if i > 0 {
			jsonSrc.WriteString(",")
		}
		jsonSrc.WriteString(`"` + n + `": {"command": "` + n + `"}`)
	}
	yamlSrc.WriteString("hooks: {}\nservers:\n")
	jsonSrc.WriteString(`}, "hooks": {}, "servers": {`)
	for i, n := range want[4:] {
		yamlSrc.WriteString("  " + n + ": {url: \"https://" + n + ".example.com\"}\n")
		if i > 0 {
			jsonSrc.WriteString(",")
		}
		jsonSrc.WriteString(`"` + n + `": {"url": "https://` + n + `.example.com"}`)
	}
	jsonSrc.WriteString("}}")
	for _, src := range []string{yamlSrc.String(), jsonSrc.String()} {
		cfg, warns := mustParse(t, src)
		wantNoWarnings(t, warns)
		if got := serverNames(cfg); !slices.Equal(got, want) {
			t.Errorf("order = %v, want %v\nfrom %s", got, want, src)
		}
	}
}

func TestServerForms(t *testing.T) {
	tests := []struct {
		name, src string
		want      Server
	}{
		{"command means stdio", `{command: x}`, Server{Type: Stdio, Command: "x"}},
		{"url means http", `{url: "https://x.example.com/mcp"}`, Server{Type: HTTP, URL: "https://x.example.com/mcp"}},
		{"explicit stdio", `{type: stdio, command: x, args: [a, 8080, true]}`, Server{Type: Stdio, Command: "x", Args: []string{"a", "8080", "true"}}},
		{"streamable-http", `{type: streamable-http, url: "http://localhost:8080/mcp"}`, Server{Type: HTTP, URL: "http://localhost:8080/mcp"}},
		{"type case-insensitive", `{type: SSE, url: "https://x/sse"}`, Server{Type: SSE, URL: "https://x/sse"}},
		{"Cline transportType", `{transportType: streamableHttp, url: "https://x"}`, Server{Type: HTTP, URL: "https://x"}},
		{"Windsurf serverUrl", `{serverUrl: "https://x/mcp"}`, Server{Type: HTTP, URL: "https://x/mcp"}},
		{"Gemini httpUrl", `{httpUrl: "https://x/mcp"}`, Server{Type: HTTP, URL: "https://x/mcp"}},
		{"empty type is absent", `{type: "", command: x}`, Server{Type: Stdio, Command: "x"}},
		{"env scalars", `{command: x, env: {PORT: 8080, DEBUG: true, EMPTY: }}`, Server{Type: Stdio, Command: "x", Env: map[string]string{"PORT": "8080", "DEBUG": "true", "EMPTY": ""}}},
		{"timeouts", `{command: x, connect_timeout: 1.5, call_timeout: "1m30s"}`, Server{Type: Stdio, Command: "x", ConnectTimeout: 1500 * time.Millisecond, CallTimeout: 90 * time.Second}},
		{"timeout in seconds as string", `{command: x, timeout: "45"}`, Server{Type: Stdio, Command: "x", CallTimeout: 45 * time.Second}},
		{"zero and null timeouts", `{command: x, connect_timeout: 0, call_timeout: }`, Server{Type: Stdio, Command: "x"}},
		{"camelCase timeouts", `{command: x, connectTimeout: 10s, callTimeout: 20s}`, Server{Type: Stdio, Command: "x", ConnectTimeout: 10 * time.Second, CallTimeout: 20 * time.Second}},
		{"always_load", `{command: x, always_load: yes}`, Server{Type: Stdio, Command: "x", AlwaysLoad: true}},
		{"protocol legacy", `{command: x, protocol: legacy}`, Server{Type: Stdio, Command: "x", Protocol: ProtocolLegacy}},
		{"protocol auto", `{url: "https://x/mcp", protocol: auto}`, Server{Type: HTTP, URL: "https://x/mcp", Protocol: ProtocolAuto}},
		{"Hermes enabled false", `{command: x, enabled: false}`, Server{Type: Stdio, Command: "x", Disabled: true}},
		{"disabled", `{command: x, disabled: true}`, Server{Type: Stdio, Command: "x", Disabled: true}},
		{"client keys ignored", `{command: x, description: d, autoApprove: [a], alwaysAllow: [b], dev: {watch: "*.ts"}}`, Server{Type: Stdio, Command: "x"}},
		{"Hermes resources and prompts", `{command: x, tools: {resources: false, prompts: false}}`, Server{Type: Stdio, Command: "x"}},
		{"null args env headers", `{command: x, args: , env: }`, Server{Type: Stdio, Command: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "mcpServers:\n  s: "+tt.src+"\n")
			wantNoWarnings(t, warns)
			tt.want.Name = "s"
			if got := server(t, cfg, "s"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name, src string
		key       string
		want      []string
		check     func(t *testing.T, cfg *Config)
	}{
		{"unknown top-level key", "mcpServers: {a: {command: x}}\nmodel: opus\n", "model", []string{"unknown setting", "mcpServers"}, nil},
		{"unknown server key", "mcpServers: {a: {command: x, retries: 3}}\n", "mcpServers.a.retries", []string{"unknown setting, ignored", "a server takes"}, nil},
		{"oauth unknown key", "mcpServers: {a: {url: \"https://x\", oauth: {clientId: c, pkce: true}}}\n", "mcpServers.a.oauth.pkce", []string{"unknown oauth setting, ignored", "clientId, clientSecret"}, nil},
		{"oauth discovered key", "mcpServers: {a: {url: \"https://x\", oauth: {tokenUrl: \"https://as/token\"}}}\n", "mcpServers.a.oauth.tokenUrl", []string{"discovered from the server"}, nil},
		{"oauth not a mapping", "mcpServers: {a: {url: \"https://x\", oauth: [1]}}\n", "mcpServers.a.oauth", []string{"not a mapping", "clientId"}, nil},
		{"oauth redirect not loopback", "mcpServers: {a: {url: \"https://x\", oauth: {redirectUri: \"https://evil.example/cb\"}}}\n", "mcpServers.a.oauth.redirectUri", []string{"not on a loopback address", "ignored"}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].OAuth.RedirectURI != "" {
				t.Error("the non-loopback redirect was kept")
			}
		}},
		{"oauth bad port", "mcpServers: {a: {url: \"https://x\", oauth: {callbackPort: 70000}}}\n", "mcpServers.a.oauth.callbackPort", []string{"not a TCP port"}, nil},
		{"oauth secret without id", "mcpServers: {a: {url: \"https://x\", oauth: {clientSecret: s}}}\n", "mcpServers.a.oauth", []string{"no clientId"}, nil},
		{"oauth on stdio", "mcpServers: {a: {command: x, oauth: {clientId: c}}}\n", "mcpServers.a.oauth", []string{"applies only to http and sse servers"}, nil},
		{"Gemini authProviderType", "mcpServers: {a: {url: \"https://x\", authProviderType: google_credentials}}\n", "mcpServers.a.authProviderType", []string{"not supported", "dynamic_discovery"}, nil},
		{"headersHelper", "mcpServers: {a: {url: \"https://x\", headersHelper: /bin/h}}\n", "mcpServers.a.headersHelper", []string{"not supported"}, nil},
		{"alias twice", "mcpServers: {a: {command: x, alwaysLoad: true, always_load: false}}\n", "mcpServers.a.always_load", []string{"means the same as alwaysLoad, which is used"}, func(t *testing.T, cfg *Config) {
			if !cfg.Servers[0].AlwaysLoad {
				t.Error("the first spelling should win")
			}
		}},
		{"json duplicate key", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, "mcpServers.a", []string{"given twice (lines 1 and 1)", "the first is used"}, func(t *testing.T, cfg *Config) {
			if len(cfg.Servers) != 1 || cfg.Servers[0].Command != "x" {
				t.Errorf("servers = %+v", cfg.Servers)
			}
		}},
		{"yaml duplicate key", "mcpServers:\n  a: {command: x}\n  a: {command: y}\n", "mcpServers.a", []string{"given twice (lines 2 and 3)"}, nil},
		{"same name in mcpServers and servers", "mcpServers: {a: {command: x}}\nservers: {a: {command: y}}\n", "servers.a", []string{`"a" is already used by mcpServers.a`}, nil},
		{"headers on stdio", "mcpServers: {a: {command: x, headers: {A: b}}}\n", "mcpServers.a.headers", []string{"applies only to http and sse servers", "ignored"}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Headers != nil {
				t.Error("headers kept")
			}
		}},
		{"env on http", "mcpServers: {a: {url: \"https://x\", env: {A: b}}}\n", "mcpServers.a.env", []string{"applies only to stdio servers"}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Env != nil {
				t.Error("env kept")
			}
		}},
		{"url on explicit stdio", "mcpServers: {a: {type: stdio, command: x, url: \"https://x\"}}\n", "mcpServers.a.url", []string{"applies only to http and sse servers"}, func(t *testing.T, cfg *Config) {
			if s := cfg.Servers[0]; s.Type != Stdio || s.URL != "" {
				t.Errorf("server = %+v", s)
			}
		}},
		{"command on explicit http", "mcpServers: {a: {type: http, command: x, url: \"https://x\"}}\n", "mcpServers.a.command", []string{"applies only to stdio servers"}, func(t *testing.T, cfg *Config) {
			if s := cfg.Servers[0]; s.Type != HTTP || s.Command != "" {
				t.Errorf("server = %+v", s)
			}
		}},
		{"alwaysLoad not a bool", `{"mcpServers": {"a": {"command": "x", "alwaysLoad": 1}}}`, "mcpServers.a.alwaysLoad", []string{`"1" is not true or false; using false`}, nil},
		{"disabled not a bool", "mcpServers: {a: {command: x, disabled: maybe}}\n", "mcpServers.a.disabled", []string{`"maybe" is not true or false; using false`}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Disabled {
				t.Error("disabled")
			}
		}},
		{"envFile missing", "mcpServers: {a: {command: x, envFile: /nonexistent/.env, env: {A: b}}}\n", "mcpServers.a.envFile", []string{"cannot read the env file", "starts without it"}, func(t *testing.T, cfg *Config) {
			if len(cfg.Servers) != 1 || cfg.Servers[0].Env["A"] != "b" {
				t.Errorf("servers = %+v", cfg.Servers)
			}
		}},
		{"envFile not a string", "mcpServers: {a: {command: x, envFile: [a]}}\n", "mcpServers.a.envFile", []string{"not a path"}, nil},
		{"default_config not a mapping", "mcpServers: {a: {command: x, default_config: false}}\n", "mcpServers.a.default_config", []string{"not a mapping such as {enabled: true, defer_loading: false}"}, nil},
		{"default_config bad bool", "mcpServers: {a: {command: x, default_config: {defer_loading: sometimes}}}\n", "mcpServers.a.default_config.defer_loading", []string{`"sometimes" is not true or false; left unset, so it inherits`}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Rules.DefaultConfig.DeferLoading != nil {
				t.Error("defer_loading set")
			}
		}},
		{"default_config unknown key", "mcpServers: {a: {command: x, default_config: {pinned: true}}}\n", "mcpServers.a.default_config.pinned", []string{"takes enabled and defer_loading"}, nil},
		{"configs not a mapping", "mcpServers: {a: {command: x, configs: [search]}}\n", "mcpServers.a.configs", []string{"not a mapping from tool name"}, nil},
		{"configs entry unknown key", "mcpServers: {a: {command: x, configs: {search: {defer: false}}}}\n", "mcpServers.a.configs.search.defer", []string{"unknown setting"}, nil},
		{"configs entry not a mapping", "mcpServers: {a: {command: x, configs: {search: false}}}\n", "mcpServers.a.configs.search", []string{"not a mapping"}, nil},
		{"Hermes tools not a mapping", "mcp_servers: {a: {command: x, tools: [a]}}\n", "mcp_servers.a.tools", []string{"not a mapping such as {include"}, nil},
		{"Hermes include not a list", "mcp_servers: {a: {command: x, tools: {include: {a: 1}}}}\n", "mcp_servers.a.tools.include", []string{"not a tool name or a list"}, nil},
		{"Hermes tools unknown key", "mcp_servers: {a: {command: x, tools: {only: [a]}}}\n", "mcp_servers.a.tools.only", []string{"takes include and exclude"}, nil},
		{"Hermes include and exclude", "mcp_servers: {a: {command: x, tools: {include: [a], exclude: [b]}}}\n", "mcp_servers.a.tools.exclude", []string{"include wins"}, nil},
		{"disabledTools not a list", "mcpServers: {a: {command: x, disabledTools: {a: 1}}}\n", "mcpServers.a.disabledTools", []string{"not a list of tool names"}, nil},
		{"servers not a mapping", "mcpServers: [a, b]\nhooks: {}\n", "mcpServers", []string{"is a list, not a mapping from server name"}, nil},
		{"tools not a mapping", "tools: on\n", "tools", []string{"expected a mapping such as {tool_search"}, nil},
		{"tools unknown key", "tools: {search: on}\n", "tools.search", []string{"tools takes tool_search"}, nil},
		{"tools entry without name", "mcpServers: {a: {command: x}}\ntools: [{alwaysLoad: true}]\n", "tools[0]", []string{"has no name"}, nil},
		{"tools entry not a mapping", "mcpServers: {a: {command: x}}\ntools: [read_file]\n", "tools[0]", []string{"expected {name: TOOL, alwaysLoad: true}"}, nil},
		{"tools entry unknown key", "mcpServers: {a: {command: x}}\ntools: [{name: r, pin: true}]\n", "tools[0].pin", []string{"takes name and alwaysLoad"}, nil},
		{"context_window negative", "context_window: -1\n", "context_window", []string{`"-1" is not a whole number of at least 1`, "using 200000"}, func(t *testing.T, cfg *Config) {
			if cfg.ContextWindow != DefaultContextWindow {
				t.Errorf("context window = %d", cfg.ContextWindow)
			}
		}},
		{"context_window text", "context_window: big\n", "context_window", []string{`"big" is not a whole number`}, nil},
		{"tool_search bad value", "tools:\n  tool_search: {threshold_pct: 500, max_search_limit: 99}\n", "tools.tool_search.threshold_pct", []string{"not a percentage"}, func(t *testing.T, cfg *Config) {
			if cfg.ToolSearch != policy.DefaultConfig() {
				t.Errorf("tool search = %+v", cfg.ToolSearch)
			}
		}},
		{"tool_search twice", "tool_search: off\ntools: {tool_search: on}\n", "tool_search", []string{"ignored, as tools.tool_search is also given"}, func(t *testing.T, cfg *Config) {
			if cfg.ToolSearch.Enabled != policy.On {
				t.Errorf("tool search = %+v", cfg.ToolSearch)
			}
		}},
		{"non-string key", "mcpServers:\n  [a, b]: {command: x}\n  c: {command: y}\n", "mcpServers", []string{"line 2: a key must be a plain string"}, nil},
		{"unterminated variable", "mcpServers: {a: {command: \"run ${HOME\"}}\n", "mcpServers.a.command", []string{`"${HOME" has no closing '}'`}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Command != "run ${HOME" {
				t.Errorf("command = %q", cfg.Servers[0].Command)
			}
		}},
		{"unknown variable form", "mcpServers: {a: {command: x, args: [\"${config:editor.tabSize}\"]}}\n", "mcpServers.a.args[0]", []string{"${config:editor.tabSize} is not a variable toolshed can expand", "left as written"}, func(t *testing.T, cfg *Config) {
			if cfg.Servers[0].Args[0] != "${config:editor.tabSize}" {
				t.Errorf("args = %q", cfg.Servers[0].Args)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, tt.src)
			wantWarning(t, warns, tt.key, tt.want...)
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestClientKeysIgnored(t *testing.T) {
	_, warns := mustParse(t, `{
		"$schema": "https://example.com/schema.json",
		"globalShortcut": "Ctrl+Space",
		"preferences": {"menuBarEnabled": true},
		"inputs": [{"type": "promptString", "id": "k"}],
		"mcpServers": {"a": {"command": "x"}}}`)
	wantNoWarnings(t, warns)
}

func TestYAMLAliasesAndMerge(t *testing.T) {
	cfg, warns := mustParse(t, `
x-common: &common
  command: npx
  env: &env {LOG_LEVEL: debug}
mcpServers:
  a:
    <<: *common
    args: [a]
  b:
    <<: *common
    command: uvx
    env: *env
hooks: {}
`)
	wantWarning(t, warns, "x-common", "unknown setting")
	if len(warns) != 1 {
		t.Errorf("warnings:\n%s", warningList(warns))
	}
	want := []Server{
		{Name: "a", Type: Stdio, Command: "npx", Args: []string{"a"}, Env: map[string]string{"LOG_LEVEL": "debug"}},
		{Name: "b", Type: Stdio, Command: "uvx", Env: map[string]string{"LOG_LEVEL": "debug"}},
	}
	if !reflect.DeepEqual(cfg.Servers, want) {
		t.Errorf("got  %+v\nwant %+v", cfg.Servers, want)
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("TS_SET", "value")
	t.Setenv("TS_EMPTY", "")
	unsetenv(t, "TS_UNSET", "workspaceFolder", "userHome")
	home, _ := os.UserHomeDir()
	ws := filepath.Join("some", "project")
	tests := []struct {
		in, want string
		warn     string // a substring of the one warning, or "" for none
	}{
		{"plain", "plain", ""},
		{"${TS_SET}", "value", ""},
		{"a${TS_SET}b${TS_SET}c", "avaluebvaluec", ""},
		{"${TS_UNSET}", "", "environment variable TS_UNSET is not set, so ${TS_UNSET} expands to \"\""},
		{"${TS_UNSET:-fallback}", "fallback", ""},
		{"${TS_UNSET:-}", "", ""},
		{"${TS_SET:-fallback}", "value", ""},
		{"${TS_EMPTY:-fallback}", "fallback", ""},
		{"${TS_EMPTY}", "", ""},
		{"${TS_UNSET:-${TS_SET}/x}", "value/x", ""},
		{"${TS_UNSET:-http://h:80}", "http://h:80", ""},
		{"${env:TS_SET}", "value", ""},
		{"${env:TS_UNSET}", "", "environment variable TS_UNSET is not set"},
		{"$TS_SET", "$TS_SET", ""},
		{"$$", "$$", ""},
		{"costs $5 {x}", "costs $5 {x}", ""},
		{"${", "${", "has no closing"},
		{"${}", "${}", "is not a variable toolshed can expand"},
		{"${TS SET}", "${TS SET}", "is not a variable toolshed can expand"},
		{"${TS_SET-x}", "${TS_SET-x}", "is not a variable toolshed can expand"},
		{"${command:pick}", "${command:pick}", "is not a variable toolshed can expand"},
		{"${workspaceFolder}/.env", ws + "/.env", ""},
		{"${workspaceFolderBasename}", "project", ""},
		{"${userHome}", home, ""},
		{"a${/}b${pathSeparator}c", "a" + string(os.PathSeparator) + "b" + string(os.PathSeparator) + "c", ""},
		{"${input:key}", "", "inputs does not declare"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l := &loader{dir: ws}
			if got := l.expand(tt.in, "k"); got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			switch {
			case tt.warn == "" && len(l.warns) > 0:
				t.Errorf("unexpected warnings:\n%s", warningList(l.warns))
			case tt.warn != "" && (len(l.warns) != 1 || !strings.Contains(l.warns[0].Message, tt.warn) || l.warns[0].Key != "k"):
				t.Errorf("want one warning with %q, got:\n%s", tt.warn, warningList(l.warns))
			}
		})
	}
	t.Run("environment wins over predefined", func(t *testing.T) {
		t.Setenv("workspaceFolder", "/from/env")
		l := &loader{dir: ws}
		if got := l.expand("${workspaceFolder}", "k"); got != "/from/env" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("Parse uses the working directory", func(t *testing.T) {
		wd, _ := os.Getwd()
		cfg, _ := mustParse(t, "mcpServers: {a: {command: x, cwd: \"${workspaceFolder}\"}}\n")
		if cfg.Servers[0].Cwd != wd {
			t.Errorf("cwd = %q, want %q", cfg.Servers[0].Cwd, wd)
		}
	})
}

// TestExpandEverywhere checks that every string value listed in CONFIG.md expands.
func TestExpandEverywhere(t *testing.T) {
	t.Setenv("V", "v")
	cfg, warns := mustParse(t, `
mcpServers:
  s: {command: "${V}cmd", args: ["${V}arg"], env: {E: "${V}env"}, cwd: "/${V}"}
  h: {url: "https://${V}.example.com/mcp", headers: {H: "${V}hdr"}}
profiles:
  p: {token: "${V}tok"}
hooks:
  activity_log: "/${V}/log"
`)
	wantNoWarnings(t, warns)
	s, h := cfg.Servers[0], cfg.Servers[1]
	got := []string{s.Command, s.Args[0], s.Env["E"], s.Cwd, h.URL, h.Headers["H"], cfg.Profiles["p"].Token, cfg.Hooks.ActivityLog}
	want := []string{"vcmd", "varg", "venv", "/v", "https://v.example.com/mcp", "vhdr", "vtok", "/v/log"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestEnvFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.env"), []byte("A=from-file\nB=file-only\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "toolshed.yaml")
	if err := os.WriteFile(cfgPath, []byte("mcpServers:\n  s: {command: x, envFile: app.env, env: {A: from-env}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warns, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"A": "from-env", "B": "file-only"}; !reflect.DeepEqual(cfg.Servers[0].Env, want) {
		t.Errorf("env = %v, want %v", cfg.Servers[0].Env, want)
	}
	wantWarning(t, warns, "mcpServers.s.envFile", "line 3 is not NAME=value")
}

func TestParseDotenv(t *testing.T) {
	vars, bad := parseDotenv([]byte("\ufeffA=1\n\n# c\nexport B = two \nC=\"x\\ty\"\nD='$raw'\nE=v # note\nF=\"unterminated\\\"\nG\n1X=2\nH=a=b\n"))
	want := map[string]string{"A": "1", "B": "two", "C": "x\ty", "D": "$raw", "E": "v", "F": "unterminated\\", "H": "a=b"}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("vars = %q\nwant   %q", vars, want)
	}
	if !slices.Equal(bad, []int{9, 10}) {
		t.Errorf("bad lines = %v, want [9 10]", bad)
	}
}

func TestStripJSONC(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": "http://x"}`, `{"a": "http://x"}`},
		{"{\"a\": 1 // note\n}", "{\"a\": 1        \n}"},
		{"{/* c\nd */\"a\": 1}", "{    \n    \"a\": 1}"},
		{`{"a": [1, 2,], "b": "x,]",}`, `{"a": [1, 2 ], "b": "x,]" }`},
		{`{"a": "q\"//not a comment"}`, `{"a": "q\"//not a comment"}`},
		{"[1,\n]", "[1 \n]"},
	}
	for _, tt := range tests {
		if got := string(stripJSONC([]byte(tt.in))); got != tt.want {
			t.Errorf("stripJSONC(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSONNodePositions(t *testing.T) {
	_, warns := mustParse(t, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"a\": {\"command\": \"y\"}\n  },\n  \"zzz\": 1\n}")
	wantWarning(t, warns, "mcpServers.a", "given twice (lines 3 and 4)")
	wantWarning(t, warns, "zzz", "unknown setting")
}

func TestProfiles(t *testing.T) {
	t.Setenv("TS_TOKEN", "tok-env")
	unsetenv(t, "TS_NO_TOKEN")
	tests := []struct {
		name, src string
		want      map[string]Profile
		key       string // a warning key, or ""
		warn      []string
	}{
		{"valid", `{ops: {servers: [grafana, "sent*"], tools: ["github__list_*"], token: "${TS_TOKEN}"}, dev_2: {servers: git*}}`,
			map[string]Profile{
				"ops":   {Scope: policy.Scope{Servers: []string{"grafana", "sent*"}, Tools: []string{"github__list_*"}}, Token: "tok-env"},
				"dev_2": {Scope: policy.Scope{Servers: []string{"git*"}}},
			}, "", nil},
		{"empty profile sees everything", `{all: , admin: {token: t}}`,
			map[string]Profile{"all": {}, "admin": {Token: "t"}}, "", nil},
		{"name with a space", `{"ops team": {servers: [a]}, ok: {}}`,
			map[string]Profile{"ok": {}}, "profiles.ops team", []string{"can hold only letters, digits, '-' and '_'", "/mcp/ops team", `Profile "ops team" is left out`}},
		{"name with a slash", `{"a/b": {}}`, nil, "profiles.a/b", []string{"rename it"}},
		{"bad glob", `{ops: {tools: ["github__[a"]}, ok: {}}`,
			map[string]Profile{"ok": {}}, "profiles.ops", []string{`"github__[a" is not a valid glob`, "left out"}},
		{"shared token", `{a: {token: same}, b: {token: same}}`,
			map[string]Profile{"a": {Token: "same"}}, "profiles.b.token", []string{`same as the token of profile "a"`, "give each profile its own token", `Profile "b" is left out`}},
		{"servers not a list", `{a: {servers: {x: 1}}}`, nil, "profiles.a", []string{"servers is a mapping, not a glob or a list of globs"}},
		{"servers list with a mapping", `{a: {servers: [x, {y: 1}]}}`, nil, "profiles.a", []string{"not a glob or a list of globs"}},
		{"token not a string", `{a: {token: [x]}}`, nil, "profiles.a", []string{"token is a list, not a string"}},
		{"unset token", `{a: {token: "${TS_NO_TOKEN}"}}`, map[string]Profile{"a": {}}, "profiles.a.token", []string{"TS_NO_TOKEN is not set"}},
		{"unknown key", `{a: {servers: [x], model: opus}}`, map[string]Profile{"a": {Scope: policy.Scope{Servers: []string{"x"}}}}, "profiles.a.model", []string{"a profile takes servers, tools, token and claims"}},
		{"not a mapping", `[ops, dev]`, nil, "profiles", []string{"is a list, not a mapping"}},
		{"profile not a mapping", `{a: [x]}`, nil, "profiles.a", []string{"is a list, not a mapping such as {servers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "profiles: "+tt.src+"\n")
			if !reflect.DeepEqual(cfg.Profiles, tt.want) {
				t.Errorf("profiles = %+v\nwant       %+v", cfg.Profiles, tt.want)
			}
			if tt.key == "" {
				wantNoWarnings(t, warns)
			} else {
				wantWarning(t, warns, tt.key, tt.warn...)
			}
		})
	}
}

func TestHooks(t *testing.T) {
	t.Setenv("TS_LOGS", "/logs")
	tests := []struct {
		name, src string
		want      Hooks
		key       string
		warn      []string
	}{
		{"valid", `{allow: ["*"], deny: "github__delete_*", approve: [slack__post], approve_destructive: true, secret_fields: [password], activity_log: "${TS_LOGS}/a.jsonl"}`,
			Hooks{Allow: []string{"*"}, Deny: []string{"github__delete_*"}, Approve: []string{"slack__post"}, ApproveDestructive: true, SecretFields: []string{"password"}, ActivityLog: "/logs/a.jsonl"}, "", nil},
		{"stderr log", `{activity_log: "-"}`, Hooks{ActivityLog: "-"}, "", nil},
		{"bad deny glob", `{deny: ["a__[x", "b__*"]}`, Hooks{Deny: []string{"b__*"}}, "hooks.deny[0]", []string{`"a__[x" is not a valid glob`, "NOT denied", "fix it"}},
		{"bad approve glob", `{approve: ["[", "c__*"]}`, Hooks{Approve: []string{"c__*"}}, "hooks.approve[0]", []string{"do NOT ask for approval"}},
		{"bad allow glob", `{allow: ["[", "c__*"]}`, Hooks{Allow: []string{"c__*"}}, "hooks.allow[0]", []string{"may not be called"}},
		{"allow with no valid glob fails closed", `{allow: ["["]}`, Hooks{Allow: []string{matchNothing}}, "hooks.allow", []string{"no valid pattern left, so no tool may be called"}},
		{"allow not a list fails closed", `{allow: {a: 1}}`, Hooks{Allow: []string{matchNothing}}, "hooks.allow", []string{"no tool may be called"}},
		{"deny not a list", `{deny: {a: 1}}`, Hooks{}, "hooks.deny", []string{"ignored, so no tool is denied"}},
		{"empty allow allows all", `{allow: []}`, Hooks{}, "", nil},
		{"approve_destructive not a bool", `{approve_destructive: maybe}`, Hooks{}, "hooks.approve_destructive", []string{`"maybe" is not true or false; using false`}},
		{"secret_fields not a list", `{secret_fields: {a: 1}}`, Hooks{}, "hooks.secret_fields", []string{"no field is hidden"}},
		{"empty secret field", `{secret_fields: [a, ""]}`, Hooks{SecretFields: []string{"a"}}, "hooks.secret_fields[1]", []string{"is empty"}},
		{"activity_log not a string", `{activity_log: [a]}`, Hooks{}, "hooks.activity_log", []string{"no activity log is written"}},
		{"unknown key", `{block: [x]}`, Hooks{}, "hooks.block", []string{"hooks takes allow, deny"}},
		{"not a mapping", `[a]`, Hooks{}, "hooks", []string{"is a list, not a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "hooks: "+tt.src+"\n")
			if !reflect.DeepEqual(cfg.Hooks, tt.want) {
				t.Errorf("hooks = %#v\nwant    %#v", cfg.Hooks, tt.want)
			}
			if tt.key == "" {
				wantNoWarnings(t, warns)
			} else {
				wantWarning(t, warns, tt.key, tt.warn...)
			}
		})
	}
	// matchNothing must be a valid glob that no qualified name matches.
	if err := (policy.Scope{Tools: []string{matchNothing}}).Check(); err != nil {
		t.Error(err)
	}
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		name, src string
		want      RateLimit
		key       string
		warn      []string
	}{
		{"valid", `{calls_per_minute: 60, burst: 10}`, RateLimit{60, 10}, "", nil},
		{"no burst", `{calls_per_minute: 60}`, RateLimit{CallsPerMinute: 60}, "", nil},
		{"null", ``, RateLimit{}, "", nil},
		{"negative", `{calls_per_minute: -1}`, RateLimit{}, "rate_limit.calls_per_minute", []string{`"-1" is not a whole number of 0 or more`, "no rate limit"}},
		{"text", `{calls_per_minute: 60, burst: lots}`, RateLimit{CallsPerMinute: 60}, "rate_limit.burst", []string{`"lots" is not a whole number`}},
		{"float", `{calls_per_minute: 1.5}`, RateLimit{}, "rate_limit.calls_per_minute", []string{"not a whole number"}},
		{"burst alone", `{burst: 5}`, RateLimit{}, "rate_limit.burst", []string{"no effect without calls_per_minute"}},
		{"unknown key", `{per_hour: 5}`, RateLimit{}, "rate_limit.per_hour", []string{"rate_limit takes calls_per_minute and burst"}},
		{"not a mapping", `100`, RateLimit{}, "rate_limit", []string{`is the number 100, not a mapping`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "rate_limit: "+tt.src+"\n")
			if cfg.RateLimit != tt.want {
				t.Errorf("rate limit = %+v, want %+v", cfg.RateLimit, tt.want)
			}
			if tt.key == "" {
				wantNoWarnings(t, warns)
			} else {
				wantWarning(t, warns, tt.key, tt.warn...)
			}
		})
	}
}

func TestToolSearch(t *testing.T) {
	tests := []struct {
		name, src string
		want      policy.Config
	}{
		{"absent", "hooks: {}\n", policy.DefaultConfig()},
		{"full", "tools:\n  tool_search: {enabled: on, threshold_pct: 15, search_default_limit: 3, max_search_limit: 10}\n",
			policy.Config{Enabled: policy.On, ThresholdPct: 15, SearchDefaultLimit: 3, MaxSearchLimit: 10, ListingTokens: 200}},
		{"legacy true", "tools: {tool_search: true}\n", policy.DefaultConfig()},
		{"legacy false", "tools: {tool_search: false}\n", policy.Config{Enabled: policy.Off, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200}},
		{"top level", "tool_search: {enabled: off}\n", policy.Config{Enabled: policy.Off, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200}},
		{"json", `{"tools": {"tool_search": {"enabled": "on", "threshold_pct": 0}}}`, policy.Config{Enabled: policy.On, ThresholdPct: 0, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, tt.src)
			wantNoWarnings(t, warns)
			if cfg.ToolSearch != tt.want {
				t.Errorf("tool search = %+v, want %+v", cfg.ToolSearch, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	cfg, warns := mustParse(t, `
mcpServers:
  github:
    command: x
    default_config: {enabled: true, defer_loading: false}
    configs:
      search_code: {defer_loading: true}
      delete_repo: {enabled: false}
      noop:
  hermes:
    command: y
    tools: {include: [a, b]}
  hermes_explicit:
    command: y
    default_config: {enabled: true}
    configs: {a: {enabled: false}}
    tools: {include: a}
  excluded:
    command: z
    tools: {exclude: [c]}
    disabledTools: [d]
  windsurf:
    command: w
    disabledTools: [e]
    configs: {e: {enabled: true}}
tools:
  - name: read_file
    alwaysLoad: true
  - name: github__search_code
    alwaysLoad: true
  - name: write_file
    alwaysLoad: false
`)
	wantNoWarnings(t, warns)
	want := map[string]policy.ServerRules{
		"github": {
			DefaultConfig: policy.ToolConfig{Enabled: bptr(true), DeferLoading: bptr(false)},
			Configs: map[string]policy.ToolConfig{
				"search_code": {DeferLoading: bptr(true)}, // explicit configs win over the pin
				"delete_repo": {Enabled: bptr(false)},
				"noop":        {},
				"read_file":   {DeferLoading: bptr(false)},
			},
		},
		"hermes": {
			DefaultConfig: policy.ToolConfig{Enabled: bptr(false)},
			Configs: map[string]policy.ToolConfig{
				"a": {Enabled: bptr(true)}, "b": {Enabled: bptr(true)},
				"read_file": {DeferLoading: bptr(false)},
			},
		},
		"hermes_explicit": {
			DefaultConfig: policy.ToolConfig{Enabled: bptr(true)},
			Configs: map[string]policy.ToolConfig{
				"a":         {Enabled: bptr(false)},
				"read_file": {DeferLoading: bptr(false)},
			},
		},
		"excluded": {
			Configs: map[string]policy.ToolConfig{
				"c": {Enabled: bptr(false)}, "d": {Enabled: bptr(false)},
				"read_file": {DeferLoading: bptr(false)},
			},
		},
		"windsurf": {
			Configs: map[string]policy.ToolConfig{
				"e":         {Enabled: bptr(true)},
				"read_file": {DeferLoading: bptr(false)},
			},
		},
	}
	for _, s := range cfg.Servers {
		if !reflect.DeepEqual(s.Rules, want[s.Name]) {
			t.Errorf("%s rules = %s\nwant %s", s.Name, rulesString(s.Rules), rulesString(want[s.Name]))
		}
	}
}

func rulesString(r policy.ServerRules) string {
	f := func(c policy.ToolConfig) string {
		s := "{"
		if c.Enabled != nil {
			s += " enabled=" + map[bool]string{true: "true", false: "false"}[*c.Enabled]
		}
		if c.DeferLoading != nil {
			s += " defer_loading=" + map[bool]string{true: "true", false: "false"}[*c.DeferLoading]
		}
		return s + " }"
	}
	out := "default " + f(r.DefaultConfig)
	keys := make([]string, 0, len(r.Configs))
	for k := range r.Configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out += " " + k + ":" + f(r.Configs[k])
	}
	return out
}

func TestDuration(t *testing.T) {
	tests := []struct {
		src     string
		want    time.Duration
		problem string
	}{
		{"30s", 30 * time.Second, ""},
		{"30", 30 * time.Second, ""},
		{"0.25", 250 * time.Millisecond, ""},
		{"1h", time.Hour, ""},
		{"0", 0, ""},
		{"", 0, ""},
		{"-1", 0, "negative"},
		{"-2m", 0, "negative"},
		{"3 s", 0, "not a duration"},
		{".nan", 0, "not a duration"},
		{".inf", 0, "not a duration"},
		{"1e20", 0, "too long"},
	}
	for _, tt := range tests {
		cfg, warns, err := Parse([]byte("mcpServers: {ok: {command: y}, s: {command: x, call_timeout: "+tt.src+"}}\n"), "t")
		if err != nil {
			t.Fatal(err)
		}
		if tt.problem == "" {
			if len(cfg.Servers) != 2 || cfg.Servers[1].CallTimeout != tt.want {
				t.Errorf("%q: servers %+v, warnings %v", tt.src, cfg.Servers, warns)
			}
			continue
		}
		if !slices.Equal(serverNames(cfg), []string{"ok"}) || !hasWarning(warns, "mcpServers.s.call_timeout", tt.problem) {
			t.Errorf("%q: want %q; servers %+v, warnings %v", tt.src, tt.problem, cfg.Servers, warns)
		}
	}
}

func TestWorkspaceOf(t *testing.T) {
	abs, _ := filepath.Abs("proj")
	for in, want := range map[string]string{
		"proj/.vscode/mcp.json": abs,
		"proj/.cursor/mcp.json": abs,
		"proj/.mcp.json":        abs,
		"proj/toolshed.yaml":    abs,
	} {
		if got := workspaceOf(in); got != want {
			t.Errorf("workspaceOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMergeBlowUp guards against exponential work on YAML merge keys that reach one
// mapping through many aliases (2^40 merges without the guard).
func TestMergeBlowUp(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &a0 {command: x}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("mcpServers:\n  s: *a40\n")
	cfg, _ := mustParse(t, b.String())
	if s := server(t, cfg, "s"); s.Command != "x" {
		t.Errorf("server = %+v", s)
	}
}

// TestDeepDefaults checks that nested ${A:-${A:-...}} defaults expand.
func TestDeepDefaults(t *testing.T) {
	unsetenv(t, "TS_A")
	s := strings.Repeat("${TS_A:-", 2000) + "x" + strings.Repeat("}", 2000)
	cfg, warns := mustParse(t, "mcpServers: {s: {command: \""+s+"\"}}\n")
	wantNoWarnings(t, warns)
	if got := server(t, cfg, "s").Command; got != "x" {
		t.Errorf("command = %q", got)
	}
}

// TestConfigDocExample keeps the complete example of CONFIG.md loading cleanly.
func TestConfigDocExample(t *testing.T) {
	doc, err := os.ReadFile("CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Complete example\n\n```yaml\n")
	src, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("CONFIG.md has no complete example")
	}
	t.Setenv("GITHUB_TOKEN", "ghp_x")
	t.Setenv("OPS_TOKEN", "ops")
	cfg, warns := mustParse(t, src)
	wantNoWarnings(t, warns)
	if got := serverNames(cfg); !slices.Equal(got, []string{"github", "slack", "sentry", "grafana"}) {
		t.Errorf("servers = %v", got)
	}
	if len(cfg.Profiles) != 2 || cfg.RateLimit.CallsPerMinute != 120 || cfg.ToolSearch.MaxSearchLimit != 30 || len(cfg.Hooks.Deny) != 2 {
		t.Errorf("settings = %+v", cfg)
	}
}
