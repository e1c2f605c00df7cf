package config

import (
	"fmt"
	"math"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/policy"
)

// serverFields maps each per-server key toolshed reads, in every client's spelling, to
// one canonical name.
var serverFields = map[string]string{
	"type":             "type",
	"transportType":    "type", // Cline
	"command":          "command",
	"args":             "args",
	"env":              "env",
	"envFile":          "envFile", // VS Code, Cursor
	"env_file":         "envFile",
	"cwd":              "cwd",
	"url":              "url",
	"serverUrl":        "url", // Windsurf
	"httpUrl":          "url", // Gemini CLI (Streamable HTTP)
	"headers":          "headers",
	"alwaysLoad":       "alwaysLoad",
	"always_load":      "alwaysLoad",
	"disabled":         "disabled",
	"enabled":          "enabled", // Hermes
	"connect_timeout":  "connect_timeout",
	"connectTimeout":   "connect_timeout",
	"call_timeout":     "call_timeout",
	"callTimeout":      "call_timeout",
	"timeout":          "call_timeout", // Hermes, Cline: seconds per tool call
	"default_config":   "default_config",
	"configs":          "configs",
	"tools":            "tools",         // Hermes: {include, exclude}
	"disabledTools":    "disabledTools", // Windsurf, Roo Code
	"protocol":         "protocol",
	"oauth":            "oauth",
	"auth":             "oauth",            // Hermes (auth: oauth), Cursor (auth: {CLIENT_ID, ...})
	"authProviderType": "authProviderType", // Gemini CLI
}

// ignoredServerKeys are per-server keys of other clients that do not change what the
// gateway does; they are skipped silently. autoApprove and alwaysAllow let a client skip
// its own confirmation prompts: ignoring them can only ask more, never less (toolshed's
// approvals are hooks.approve). dev is VS Code's watch/debug mode for server authors.
var ignoredServerKeys = map[string]bool{"description": true, "autoApprove": true, "alwaysAllow": true, "dev": true}

// unsupportedServerKeys are per-server keys toolshed knows but cannot honour.
var unsupportedServerKeys = map[string]string{
	"headersHelper": "header helper commands are not supported; write the headers under headers, with ${VAR} for secrets",
}

// stdioFields and remoteFields are the keys that apply to one kind of transport only.
var (
	stdioFields  = []string{"command", "args", "env", "envFile", "cwd"}
	remoteFields = []string{"url", "headers", "oauth", "authProviderType"}
)

// serverErr is a problem that leaves one server out.
type serverErr struct{ key, msg string }

// servers reads one mapping of servers (mcpServers, servers or mcp_servers) into
// cfg.Servers and returns how many entries it has, usable or not.
func (l *loader) servers(cfg *Config, n *yaml.Node, key string, seen map[string]string) int {
	if isNull(n) {
		return 0
	}
	if n.Kind != yaml.MappingNode {
		l.warn(key, "is %s, not a mapping from server name to its settings; ignored. Write {\"github\": {\"command\": \"npx\", \"args\": [...]}}", kindName(n))
		return 0
	}
	ps := l.pairs(n, key)
	for _, p := range ps {
		path := join(key, p.key)
		s, err := l.server(p.key, p.val, path)
		if err != nil {
			l.leftOut = append(l.leftOut, leftOutServer{key: err.key, why: err.msg, warning: len(l.warns)})
			l.warn(err.key, "%s. Server %q is left out; the other servers still load", err.msg, p.key)
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			l.warn(path, "the server name %q is already used by %s; rename one of them. This one is left out; the other servers still load", s.Name, prev)
			continue
		}
		seen[s.Name] = path
		cfg.Servers = append(cfg.Servers, s)
	}
	return len(ps)
}

// server reads one server entry; path is its dotted key, such as "mcpServers.github".
func (l *loader) server(name string, n *yaml.Node, path string) (Server, *serverErr) {
	fail := func(key, format string, args ...any) (Server, *serverErr) {
		return Server{}, &serverErr{key, fmt.Sprintf(format, args...)}
	}
	qname, err := catalog.ServerName(name)
	if err != nil {
		return fail(path, "%v (tools are named SERVER__TOOL, so the name must stay unambiguous)", err)
	}
	if qname != name {
		l.warn(path, "the server name %q holds characters tool names cannot carry, so its tools are named %s__TOOL; rename the server to %q to make this explicit", name, qname, qname)
	}
	if isNull(n) {
		return fail(path, "has no settings; give it a command (and args) to start a local server, or a url to reach a remote one")
	}
	if n.Kind != yaml.MappingNode {
		return fail(path, "is %s, not a mapping; write {\"command\": ..., \"args\": [...]} for a local server or {\"url\": ...} for a remote one", kindName(n))
	}

	fields := map[string]*yaml.Node{} // canonical key -> value
	given := map[string]string{}      // canonical key -> key as written
	for _, p := range l.pairs(n, path) {
		key := join(path, p.key)
		if c, ok := serverFields[p.key]; ok {
			if prev, dup := given[c]; dup {
				l.warn(key, "means the same as %s, which is used; remove one of them", prev)
				continue
			}
			given[c], fields[c] = p.key, p.val
			continue
		}
		switch {
		case ignoredServerKeys[p.key]:
		case unsupportedServerKeys[p.key] != "":
			l.warn(key, "%s; ignored", unsupportedServerKeys[p.key])
		default:
			l.warn(key, "unknown setting, ignored; a server takes type, command, args, env, envFile, cwd, url, headers, oauth, alwaysLoad, disabled, connect_timeout, call_timeout, protocol, default_config and configs")
		}
	}
	at := func(c string) string { return join(path, given[c]) }

	s := Server{Name: qname}
	if v := fields["type"]; v != nil {
		t, ok := str(v)
		if !ok {
			return fail(at("type"), "is %s; write stdio, http or sse, or leave type out", kindName(v))
		}
		if s.Type, ok = transport(t); !ok {
			return fail(at("type"), "%q is not a transport toolshed speaks; use stdio (a local command), http (Streamable HTTP) or sse, or leave type out", t)
		}
	}
	var command, url string
	for _, f := range []struct {
		name, what string
		dst        *string
	}{
		{"command", "program to run (its arguments go in args)", &command},
		{"url", "server's address", &url},
	} {
		v := fields[f.name]
		if v == nil {
			continue
		}
		sv, ok := text(v)
		if !ok {
			return fail(at(f.name), "is %s, not a string; give the %s as one string, in quotes", kindName(v), f.what)
		}
		*f.dst = strings.TrimSpace(l.expand(sv, at(f.name)))
	}
	switch s.Type {
	case "":
		switch {
		case command != "" && url != "":
			return fail(path, "has both command and url; keep command for a local server or url for a remote one, or set type to say which")
		case command != "":
			s.Type = Stdio
		case url != "":
			s.Type = HTTP
		case fields["command"] != nil:
			return fail(at("command"), "is empty (after expanding variables); give the program to run")
		case fields["url"] != nil:
			return fail(at("url"), "is empty (after expanding variables); give the server's address, such as https://example.com/mcp")
		default:
			return fail(path, "has neither command nor url; give a command (and args) to start a local server, or a url to reach a remote one")
		}
	case Stdio:
		if command == "" {
			return fail(path, "has type stdio but no command; give the program to run, or set type to http with a url")
		}
	default:
		if url == "" {
			return fail(path, "has type %s but no url; give the server's address, such as https://example.com/mcp", s.Type)
		}
	}
	unused, kind := remoteFields, "http and sse"
	if s.Type != Stdio {
		unused, kind = stdioFields, "stdio"
	}
	for _, c := range unused {
		if fields[c] != nil {
			l.warn(at(c), "applies only to %s servers and %q is a %s server; ignored", kind, name, s.Type)
			delete(fields, c)
		}
	}

	if s.Type == Stdio {
		s.Command = command
		if v := fields["args"]; v != nil && !isNull(v) {
			if v.Kind != yaml.SequenceNode {
				return fail(at("args"), "is %s, not a list; write the arguments as a list, such as [\"-y\", \"@modelcontextprotocol/server-github\"]", kindName(v))
			}
			for i, item := range v.Content {
				key := fmt.Sprintf("%s[%d]", at("args"), i)
				a, ok := str(deref(item))
				if !ok {
					return fail(key, "is %s, not a string; write each argument as a string", kindName(deref(item)))
				}
				s.Args = append(s.Args, l.expand(a, key))
			}
		}
		var bad *serverErr
		if s.Env, bad = l.stringMap(fields["env"], at("env"), false); bad != nil {
			return Server{}, bad
		}
		if v := fields["envFile"]; v != nil && !isNull(v) {
			l.envFile(&s, v, at("envFile"))
		}
		if v := fields["cwd"]; v != nil {
			c, ok := text(v)
			if !ok {
				return fail(at("cwd"), "is %s, not a string; give the directory to start the server in, in quotes", kindName(v))
			}
			s.Cwd = l.expand(c, at("cwd"))
		}
	} else {
		s.URL = url
		u, err := neturl.Parse(url)
		if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fail(at("url"), "%q is not an http:// or https:// address; fix it (a local server takes command instead of url)", redact.String(url))
		}
		var bad *serverErr
		if s.Headers, bad = l.stringMap(fields["headers"], at("headers"), true); bad != nil {
			return Server{}, bad
		}
		if v := fields["oauth"]; v != nil {
			s.OAuth = l.oauthBlock(v, at("oauth"))
		}
		if v := fields["authProviderType"]; v != nil {
			l.authProviderType(v, at("authProviderType"))
		}
	}

	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"connect_timeout", &s.ConnectTimeout}, {"call_timeout", &s.CallTimeout}} {
		if v := fields[f.name]; v != nil {
			d, problem := duration(v)
			if problem != "" {
				return fail(at(f.name), "%s is %s; write a duration such as \"30s\" or \"2m\", or a number of seconds (0 or nothing means the default)", describe(v), problem)
			}
			*f.dst = d
		}
	}
	if v := fields["protocol"]; v != nil {
		p, ok := str(v)
		switch {
		case ok && (p == ProtocolAuto || p == ProtocolLegacy):
			s.Protocol = p
		case ok:
			return fail(at("protocol"), "%q is not a protocol setting; write auto (the newest MCP version the server speaks, 2026-07-28 included; the default) or legacy (initialize, 2025-11-25 at most)", p)
		default:
			return fail(at("protocol"), "is %s; write auto or legacy, or leave protocol out", kindName(v))
		}
	}
	if v := fields["alwaysLoad"]; v != nil {
		s.AlwaysLoad = l.boolean(v, at("alwaysLoad"), false)
	}
	if v := fields["disabled"]; v != nil {
		s.Disabled = l.boolean(v, at("disabled"), false)
	}
	if v := fields["enabled"]; v != nil && !l.boolean(v, at("enabled"), true) {
		s.Disabled = true
	}
	l.rules(&s, fields, at)
	return s, nil
}

// transport reads a type; "" means not given.
func transport(t string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "":
		return "", true
	case "stdio":
		return Stdio, true
	case "http", "streamable-http", "streamable_http", "streamablehttp", "streamable":
		return HTTP, true
	case "sse":
		return SSE, true
	}
	return "", false
}

// duration reads a timeout: a Go duration ("30s", "1m30s") or a number of seconds. It
// returns what is wrong, or "".
func duration(n *yaml.Node) (time.Duration, string) {
	if isNull(n) {
		return 0, ""
	}
	if n.Kind != yaml.ScalarNode {
		return 0, "not a duration"
	}
	v := strings.TrimSpace(n.Value)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, "not a duration"
		case f < 0:
			return 0, "negative"
		case f*float64(time.Second) >= math.MaxInt64:
			return 0, "too long"
		}
		return time.Duration(f * float64(time.Second)), ""
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, "not a duration"
	case d < 0:
		return 0, "negative"
	}
	return d, ""
}

func checkEnvName(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return "is not a usable environment variable name (it is empty or holds '=')"
	}
	return ""
}

func checkHeaderName(k string) string {
	if k == "" {
		return "is not a usable header name (it is empty)"
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return "is not a usable header name (it holds a space, ':' or another character HTTP forbids there)"
		}
	}
	return ""
}

// stringMap reads env or headers: a mapping of names to strings, with variables
// expanded in the values.
func (l *loader) stringMap(n *yaml.Node, key string, headers bool) (map[string]string, *serverErr) {
	check := checkEnvName
	if headers {
		check = checkHeaderName
	}
	if n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &serverErr{key, fmt.Sprintf("is %s, not a mapping; write NAME: value pairs, such as {\"API_KEY\": \"${API_KEY}\"}", kindName(n))}
	}
	out := map[string]string{}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		if problem := check(p.key); problem != "" {
			return nil, &serverErr{k, fmt.Sprintf("%q %s; fix the name", p.key, problem)}
		}
		v, ok := str(p.val)
		if !ok {
			return nil, &serverErr{k, fmt.Sprintf("is %s, not a string; quote the value", kindName(p.val))}
		}
		v = l.expand(v, k)
		if headers && strings.ContainsAny(v, "\r\n\x00") {
			return nil, &serverErr{k, "holds a line break, which a header value cannot; remove it"}
		}
		out[p.key] = v
	}
	return out, nil
}

// envFile merges the variables of an env file into s.Env; variables env gives win. A
// file that cannot be read is a Warning: the server may well start without it.
func (l *loader) envFile(s *Server, n *yaml.Node, key string) {
	p, ok := str(n)
	if !ok {
		l.warn(key, "is %s, not a path; ignored", kindName(n))
		return
	}
	if p = l.expand(p, key); p == "" {
		return
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.workspace(), p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		l.warn(key, "cannot read the env file: %v; the server starts without it. Fix the path or remove envFile", err)
		return
	}
	vars, bad := parseDotenv(data)
	for _, line := range bad {
		l.warn(key, "%s line %d is not NAME=value; skipped", p, line)
	}
	if len(vars) == 0 {
		return
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	for k, v := range vars {
		if _, set := s.Env[k]; !set {
			s.Env[k] = v
		}
	}
}

// rules reads a server's defer and enable settings into s.Rules: Anthropic's
// default_config and configs, then Hermes' tools.include/exclude and disabledTools, which
// only fill in what default_config and configs leave unset.
func (l *loader) rules(s *Server, fields map[string]*yaml.Node, at func(string) string) {
	if v := fields["default_config"]; v != nil {
		s.Rules.DefaultConfig = l.toolConfig(v, at("default_config"))
	}
	if v := fields["configs"]; v != nil && !isNull(v) {
		if v.Kind != yaml.MappingNode {
			l.warn(at("configs"), "is %s, not a mapping from tool name to {enabled, defer_loading}; ignored", kindName(v))
		} else {
			for _, p := range l.pairs(v, at("configs")) {
				if s.Rules.Configs == nil {
					s.Rules.Configs = map[string]policy.ToolConfig{}
				}
				s.Rules.Configs[p.key] = l.toolConfig(p.val, join(at("configs"), p.key))
			}
		}
	}
	setEnabled := func(tool string, on bool) {
		c := s.Rules.Configs[tool]
		if c.Enabled != nil {
			return
		}
		c.Enabled = ptr(on)
		if s.Rules.Configs == nil {
			s.Rules.Configs = map[string]policy.ToolConfig{}
		}
		s.Rules.Configs[tool] = c
	}
	if v := fields["tools"]; v != nil && !isNull(v) {
		key := at("tools")
		if v.Kind != yaml.MappingNode {
			l.warn(key, "is %s, not a mapping such as {include: [...]} or {exclude: [...]}; ignored", kindName(v))
		} else {
			var include, exclude []string
			for _, p := range l.pairs(v, key) {
				k := join(key, p.key)
				switch p.key {
				case "include", "exclude":
					list, ok := stringList(p.val)
					if !ok {
						l.warn(k, "is %s, not a tool name or a list of tool names; ignored", kindName(p.val))
					} else if p.key == "include" {
						include = list
					} else {
						exclude = list
					}
				case "resources", "prompts": // Hermes' utility tools; the gateway has none
				default:
					l.warn(k, "unknown setting, ignored; a server's tools takes include and exclude")
				}
			}
			if len(include) > 0 {
				if len(exclude) > 0 {
					l.warn(key+".exclude", "ignored, as include is also given (include wins); keep only one of them")
				}
				if s.Rules.DefaultConfig.Enabled == nil {
					s.Rules.DefaultConfig.Enabled = ptr(false)
				}
				for _, t := range include {
					setEnabled(t, true)
				}
			} else {
				for _, t := range exclude {
					setEnabled(t, false)
				}
			}
		}
	}
	if v := fields["disabledTools"]; v != nil {
		list, ok := stringList(v)
		if !ok {
			l.warn(at("disabledTools"), "is %s, not a list of tool names; ignored", kindName(v))
		}
		for _, t := range list {
			setEnabled(t, false)
		}
	}
}

// toolConfig reads {enabled, defer_loading}; a value that is not a boolean is left unset,
// so it inherits.
func (l *loader) toolConfig(n *yaml.Node, key string) policy.ToolConfig {
	var c policy.ToolConfig
	if isNull(n) {
		return c
	}
	if n.Kind != yaml.MappingNode {
		l.warn(key, "is %s, not a mapping such as {enabled: true, defer_loading: false}; ignored", kindName(n))
		return c
	}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		var dst **bool
		switch p.key {
		case "enabled":
			dst = &c.Enabled
		case "defer_loading":
			dst = &c.DeferLoading
		default:
			l.warn(k, "unknown setting, ignored; it takes enabled and defer_loading")
			continue
		}
		if b, ok := boolOf(p.val); ok {
			*dst = ptr(b)
		} else {
			l.warn(k, "%s is not true or false; left unset, so it inherits", describe(p.val))
		}
	}
	return c
}
