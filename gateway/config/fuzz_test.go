package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
)

// FuzzParse checks that no input panics, that every error wraps ErrConfig, and that
// what Parse returns holds only usable values: valid server names and transports, and
// valid globs.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"claude_desktop_config.json", "claude_code.mcp.json", "toolshed.yaml", "cursor/.cursor/mcp.json", "vscode/.vscode/mcp.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, p)
	}
	f.Add([]byte(`{"mcpServers": {"a": {"url": "${X:-http://h}"}}, // c`+"\n}"), "x.json")
	f.Add([]byte("mcpServers: {a: &x {command: y}, b: *x}\nprofiles: {p: {tools: ['[']}}"), "x.yaml")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		cfg, _, err := Parse(data, name)
		if err != nil {
			if cfg != nil || !errors.Is(err, ErrConfig) {
				t.Fatalf("cfg %v, err %v", cfg, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if n, err := catalog.ServerName(s.Name); err != nil || n != s.Name || seen[s.Name] {
				t.Fatalf("server name %q", s.Name)
			}
			seen[s.Name] = true
			switch s.Type {
			case Stdio:
				if strings.TrimSpace(s.Command) == "" || s.URL != "" {
					t.Fatalf("stdio server %+v", s)
				}
			case HTTP, SSE:
				if !strings.HasPrefix(s.URL, "http") || s.Command != "" {
					t.Fatalf("%s server %+v", s.Type, s)
				}
			default:
				t.Fatalf("type %q", s.Type)
			}
			if s.ConnectTimeout < 0 || s.CallTimeout < 0 {
				t.Fatalf("timeouts %+v", s)
			}
		}
		for name, p := range cfg.Profiles {
			if !validProfileName(name) || p.Scope.Check() != nil {
				t.Fatalf("profile %q %+v", name, p)
			}
		}
		h := cfg.Hooks
		if (policy.Scope{Tools: append(append(append([]string(nil), h.Allow...), h.Deny...), h.Approve...)}).Check() != nil {
			t.Fatalf("hooks %+v", h)
		}
	})
}
