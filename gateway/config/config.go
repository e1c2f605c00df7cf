// Package config reads the gateway's configuration: the upstream MCP servers, in the
// mcpServers JSON that Claude Desktop, Cursor and Claude Code use or in VS Code's servers
// form, plus toolshed's own settings (tool search, per-server defer configs, timeouts,
// profiles, hooks), in one YAML or JSON file.
package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/override"
	"github.com/toolshed/toolshed/policy"
)

// Transport kinds of an upstream server.
const (
	Stdio = "stdio" // a child process speaking MCP over stdin/stdout
	HTTP  = "http"  // Streamable HTTP
	SSE   = "sse"   // the legacy HTTP+SSE transport
)

// Protocol settings of a server: which MCP era toolshed speaks to it.
const (
	// ProtocolAuto, the default: the newest version the server offers when asked with
	// server/discover (2026-07-28), else initialize, as for older servers.
	ProtocolAuto = "auto"
	// ProtocolLegacy: initialize at 2025-11-25 at most, never 2026-07-28. For a server
	// that speaks both eras but, in the old way, asks its client for input with
	// requests of its own (sampling, elicitation, roots) or logs outside requests,
	// which the 2026-07-28 protocol has no room for.
	ProtocolLegacy = "legacy"
)

// Defaults for timeouts left unset.
const (
	// DefaultConnectTimeout bounds starting a server and listing its tools, and each
	// later listing of its tools and features.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultFirstStartTimeout bounds instead the starts of a stdio server that has not
	// been up yet since toolshed started: such a start may install the server first
	// (npx -y, uvx, docker pulling its image), which took 7-8 s for one npm reference
	// server on a 2-core machine, and 30-32 s for three at once on a loaded one. A
	// server's connect_timeout, when set, bounds every start instead.
	DefaultFirstStartTimeout = 2 * time.Minute
	DefaultCallTimeout       = 120 * time.Second
	DefaultContextWindow     = 200000
)

// Config is a whole gateway configuration.
type Config struct {
	// Servers are the upstream servers, in the order the file lists them.
	Servers []Server
	// ToolSearch holds tools.tool_search (see policy.ParseConfig).
	ToolSearch policy.Config
	// ContextWindow is the model's context window in tokens, for auto mode; 0 means
	// DefaultContextWindow.
	ContextWindow int
	// Profiles are named scopes, chosen by --profile on stdio and by path
	// (/mcp/{profile}) or bearer token over HTTP.
	Profiles map[string]Profile
	// Hooks are the rules every call passes, bridged or direct.
	Hooks Hooks
	// RateLimit bounds each session's calls; the zero value means no limit.
	RateLimit RateLimit
	// Overrides change how tools are found (keywords, aliases, title, description)
	// or hide them, in the file's order; see package override.
	Overrides []override.Rule
	// SearchLog configures the search log.
	SearchLog SearchLog
	// Embed configures hybrid search with the user's embedding model.
	Embed Embed
	// OAuth lets HTTP clients sign in with an OAuth authorization server.
	OAuth OAuth
}

// Server is one upstream MCP server.
type Server struct {
	// Name is the key the file gives the server; it prefixes its tools' qualified names.
	Name string
	// Type is Stdio, HTTP or SSE: given, or inferred (command means stdio, url http).
	Type string
	// Command, Args, Env and Cwd start a stdio server. The child gets toolshed's
	// environment plus Env.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// URL and Headers reach an HTTP or SSE server.
	URL     string
	Headers map[string]string
	// OAuth is how toolshed signs in to a remote server, when the config says; nil
	// means the defaults (see SignIn).
	OAuth *SignIn
	// AlwaysLoad pins all the server's tools: they are never deferred.
	AlwaysLoad bool
	// Disabled servers are not started.
	Disabled bool
	// ConnectTimeout bounds starting the server and listing its tools; CallTimeout one
	// tool call. Zero means the default: for ConnectTimeout, DefaultFirstStartTimeout
	// for a stdio server's starts until it has been up once, DefaultConnectTimeout
	// otherwise.
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	// Protocol is ProtocolAuto (or empty, the same) or ProtocolLegacy.
	Protocol string
	// Rules are the server's mcp_toolset-style defer settings.
	Rules policy.ServerRules
}

// Profile is a named scope.
type Profile struct {
	// Scope limits which tools the profile sees.
	Scope policy.Scope
	// Token, when set, selects this profile for HTTP requests bearing it.
	Token string
	// Claims, when set, give this profile to OAuth access tokens (see OAuth) that
	// carry one of the values listed for any of the claims named: {groups:
	// [platform]} matches a token whose groups claim is or holds "platform", and
	// {scope: [mcp:platform]} one granted that scope.
	Claims map[string][]string
}

// Hooks are checks every call of a real tool passes, whether it came directly or through
// tool_call. Patterns are globs over qualified names ("github__*").
type Hooks struct {
	// Allow, when non-empty, lists the only tools that may be called; Deny lists tools
	// that may not. Deny wins.
	Allow []string
	Deny  []string
	// Approve lists tools that need the user's approval (asked through MCP
	// elicitation) before each call; ApproveDestructive adds every tool annotated
	// destructiveHint: true.
	Approve            []string
	ApproveDestructive bool
	// SecretFields names argument fields (at any depth) whose values never reach the
	// activity log.
	SecretFields []string
	// ActivityLog is a file the gateway appends one JSON line per call to; "-" means
	// stderr, empty means no log.
	ActivityLog string
}

// RateLimit bounds the calls of each session.
type RateLimit struct {
	// CallsPerMinute is the sustained rate; Burst the calls allowed at once (0 means
	// CallsPerMinute).
	CallsPerMinute int
	Burst          int
}

// Warning reports a setting that was not usable and what was done instead.
type Warning = policy.Warning

// CheckServers returns an error wrapping ErrConfig, naming file, when the configuration
// has no server to start: it lists none (a file of settings alone), or disables every
// one it lists. Commands that serve or inspect a config's servers call it before they
// start anything; see ErrConfig for the whole rule.
func (c *Config) CheckServers(file string) error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: %s lists no servers; list them under mcpServers, such as %s", ErrConfig, file, exampleServers)
	}
	var names []string
	for _, s := range c.Servers {
		if !s.Disabled {
			return nil
		}
		names = append(names, s.Name)
	}
	return fmt.Errorf("%w: %s disables every server it lists (%s), so there is nothing to start; enable one (remove its disabled: true, or set enabled: true)", ErrConfig, file, strings.Join(names, ", "))
}

// ErrUnknownProfile is wrapped by the error of a profile name the config does not
// define.
var ErrUnknownProfile = errors.New("unknown profile")

// CheckProfile reports an error wrapping ErrUnknownProfile when name is not a profile
// of the config, saying which profiles there are. "" is the default profile, always
// there.
func (c *Config) CheckProfile(name string) error {
	if _, ok := c.Profiles[name]; ok || name == "" {
		return nil
	}
	if len(c.Profiles) == 0 {
		return fmt.Errorf("%w %q: no profiles are configured (they are defined under profiles in the config file); leave the profile out to see every tool", ErrUnknownProfile, name)
	}
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%w %q; the profiles are %s", ErrUnknownProfile, name, strings.Join(names, ", "))
}
