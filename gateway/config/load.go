package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/policy"
)

// ErrConfig is wrapped by every error Load, Parse and CheckServers return. It is
// policy.ErrConfig, so errors.Is matches either name.
//
// The rule for a mistake in a configuration is the same for every command that reads
// one (toolshed serve, and lint, tokens and stats with --config):
//
//   - A file that cannot be read, that is not YAML or JSON, or that leaves no server to
//     serve is the user's mistake, and an error wrapping ErrConfig that names the file
//     and says what to fix. Leaving no server to serve means: it lists no server and no
//     toolshed setting; or every server it lists cannot be used (Parse); or, for a
//     command that needs the file's servers, it lists none, or disables every one
//     (CheckServers). Commands exit with status 2 on it at once, before any server
//     starts.
//   - A server entry that cannot be used, among others that can, is left out with a
//     Warning that names it and says why; the others are served, as one failing
//     upstream never takes down the others. A setting that cannot be used falls back to
//     its default with a Warning.
var ErrConfig = policy.ErrConfig

// Load reads the configuration file at path; see Parse. ${workspaceFolder} and relative
// envFile paths refer to the folder holding the file, or the project folder when the file
// sits in a .vscode or .cursor folder.
func Load(path string) (*Config, []Warning, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cannot read the configuration file: %w; check the path and its permissions", ErrConfig, err)
	}
	return parse(data, path, workspaceOf(path))
}

// Parse reads a configuration from data; name (a file name) is for messages. data is one
// YAML or JSON document in any of these forms, detected by its keys:
//
//   - the mcpServers JSON of Claude Desktop, Cursor and Claude Code (.mcp.json);
//   - VS Code's mcp.json, with servers and inputs (comments and trailing commas allowed);
//   - toolshed's own YAML: servers as above (also Hermes' mcp_servers) plus tools,
//     context_window, profiles, hooks and rate_limit (see CONFIG.md).
//
// Problems with one server leave that server out with a Warning and the others load;
// unusable settings fall back to their defaults with a Warning. Parse returns an error
// wrapping ErrConfig only when data is neither YAML nor JSON, holds no servers and no
// toolshed settings at all, or lists servers none of which can be used: the error then
// says why each cannot (see ErrConfig for the whole rule). ${workspaceFolder} and
// relative envFile paths refer to the working directory.
func Parse(data []byte, name string) (*Config, []Warning, error) {
	return parse(data, name, "")
}

// workspaceOf returns the project folder of a config file.
func workspaceOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if b := filepath.Base(dir); b == ".vscode" || b == ".cursor" {
		return filepath.Dir(dir)
	}
	return dir
}

// loader holds the state of one Parse.
type loader struct {
	dir    string // the workspace folder; "" means the working directory
	inputs map[string]inputDef
	warns  []Warning
	// leftOut are the warnings of the server entries left out, each a Warning of
	// warns: when no entry is usable they become the error instead.
	leftOut []leftOutServer
}

// leftOutServer is a server entry that cannot be used: where and why, and its Warning's
// place in loader.warns.
type leftOutServer struct {
	key, why string
	warning  int
}

// inputDef is a declared VS Code input.
type inputDef struct {
	def        string
	hasDefault bool
}

func (l *loader) warn(key, format string, args ...any) {
	l.warns = append(l.warns, Warning{Key: key, Message: fmt.Sprintf(format, args...)})
}

// Top-level keys.
var (
	// serverKeys hold the servers: Claude Desktop, Cursor and Claude Code write
	// mcpServers, VS Code servers, Hermes mcp_servers.
	serverKeys = map[string]bool{"mcpServers": true, "servers": true, "mcp_servers": true}
	// settingKeys are toolshed's own settings.
	settingKeys = map[string]bool{"tools": true, "tool_search": true, "context_window": true, "profiles": true, "hooks": true, "rate_limit": true, "overrides": true, "search_log": true, "embed": true, "oauth": true}
	// clientKeys belong to the clients whose files toolshed reads; they are ignored.
	clientKeys = map[string]bool{"$schema": true, "inputs": true, "globalShortcut": true, "preferences": true}
)

func parse(data []byte, name, dir string) (*Config, []Warning, error) {
	if name == "" {
		name = "the configuration"
	}
	root, err := decode(data, name)
	if err != nil {
		return nil, nil, err
	}
	if root == nil {
		return nil, nil, fmt.Errorf("%w: %s is empty; list the upstream servers under mcpServers, such as %s", ErrConfig, name, exampleServers)
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%w: %s:%d: the document is %s, not a mapping; write an object with mcpServers (or servers) and toolshed settings", ErrConfig, name, root.Line, kindName(root))
	}
	l := &loader{dir: dir}
	cfg := &Config{ToolSearch: policy.DefaultConfig(), ContextWindow: DefaultContextWindow}
	top := l.pairs(root, "")
	for _, p := range top {
		if p.key == "inputs" {
			l.readInputs(p.val)
		}
	}
	var (
		servers      int
		settings     bool
		pins         []string
		toolSearch   *yaml.Node // tools.tool_search
		legacySearch *yaml.Node // top-level tool_search
	)
	seen := map[string]string{} // server name -> where it was defined
	for _, p := range top {
		if settingKeys[p.key] {
			settings = true
		}
		switch {
		case serverKeys[p.key]:
			servers += l.servers(cfg, p.val, p.key, seen)
		case p.key == "tools":
			toolSearch, pins = l.tools(p.val)
		case p.key == "tool_search":
			legacySearch = p.val
		case p.key == "context_window":
			cfg.ContextWindow = l.positiveInt(p.val, "context_window", DefaultContextWindow, "a number of tokens such as 200000")
		case p.key == "profiles":
			cfg.Profiles = l.profiles(p.val)
		case p.key == "hooks":
			cfg.Hooks = l.hooks(p.val)
		case p.key == "rate_limit":
			cfg.RateLimit = l.rateLimit(p.val)
		case p.key == "search_log":
			cfg.SearchLog = l.searchLog(p.val, p.key)
		case p.key == "overrides":
			cfg.Overrides = l.overrides(p.val)
		case p.key == "embed":
			var err error
			if cfg.Embed, err = l.embedSection(p.val, p.key); err != nil {
				return nil, l.warns, fmt.Errorf("%s: %w", name, err)
			}
		case p.key == "oauth":
			var err error
			if cfg.OAuth, err = l.oauth(p.val, p.key); err != nil {
				return nil, l.warns, fmt.Errorf("%s: %w", name, err)
			}
		case clientKeys[p.key]:
		default:
			l.warn(p.key, "unknown setting, ignored; the top level takes mcpServers (or servers), tools, context_window, profiles, hooks, rate_limit, overrides, search_log, embed and oauth")
		}
	}
	switch {
	case toolSearch != nil:
		if legacySearch != nil {
			l.warn("tool_search", "ignored, as tools.tool_search is also given; keep only tools.tool_search")
		}
		l.toolSearch(cfg, toolSearch, "tools.tool_search")
	case legacySearch != nil:
		l.toolSearch(cfg, legacySearch, "tool_search")
	}
	l.pin(cfg, pins)
	if servers == 0 && !settings {
		return nil, l.warns, fmt.Errorf("%w: %s has no servers and no toolshed settings; list the upstream servers under mcpServers, such as %s", ErrConfig, name, exampleServers)
	}
	if servers > 0 && len(cfg.Servers) == 0 {
		return nil, l.withoutLeftOut(), l.noUsableServer(name, servers)
	}
	return cfg, l.warns, nil
}

// exampleServers is an mcpServers section, for messages that say how to write one.
const exampleServers = `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}}}`

// noUsableServer is the error of a file that lists servers (n entries) none of which
// can be used: it says why each cannot, since warnings that they are "left out" while
// "the others still load" would not be true.
func (l *loader) noUsableServer(name string, n int) error {
	whys := make([]string, len(l.leftOut))
	for i, s := range l.leftOut {
		whys[i] = s.key + ": " + s.why
	}
	what := fmt.Sprintf("none of its %d servers can be used", n)
	if n == 1 {
		what = "its one server cannot be used"
	}
	return fmt.Errorf("%w: %s: %s, so there is nothing to serve: %s", ErrConfig, name, what, strings.Join(whys, "; "))
}

// withoutLeftOut returns the warnings but those of the servers left out.
func (l *loader) withoutLeftOut() []Warning {
	skip := map[int]bool{}
	for _, s := range l.leftOut {
		skip[s.warning] = true
	}
	var out []Warning
	for i, w := range l.warns {
		if !skip[i] {
			out = append(out, w)
		}
	}
	return out
}

// readInputs records the VS Code inputs and their defaults, for ${input:id}.
func (l *loader) readInputs(n *yaml.Node) {
	l.inputs = map[string]inputDef{}
	if n.Kind != yaml.SequenceNode {
		return
	}
	for _, item := range n.Content {
		item = deref(item)
		id := mapValue(item, "id")
		if id == nil || id.Kind != yaml.ScalarNode {
			continue
		}
		in := inputDef{}
		if d := mapValue(item, "default"); d != nil && d.Kind == yaml.ScalarNode && d.Tag != "!!null" {
			in.def, in.hasDefault = d.Value, true
		}
		l.inputs[id.Value] = in
	}
}

// tools reads the top-level tools key: a mapping holding tool_search, or a list of
// {name, alwaysLoad} entries that pin tools by name.
func (l *loader) tools(n *yaml.Node) (toolSearch *yaml.Node, pins []string) {
	switch n.Kind {
	case yaml.MappingNode:
		for _, p := range l.pairs(n, "tools") {
			if p.key == "tool_search" {
				toolSearch = p.val
				continue
			}
			l.warn("tools."+p.key, "unknown setting, ignored; tools takes tool_search")
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			key := fmt.Sprintf("tools[%d]", i)
			item = deref(item)
			if item.Kind != yaml.MappingNode {
				l.warn(key, "expected {name: TOOL, alwaysLoad: true}; ignored")
				continue
			}
			var name string
			pinned := false
			for _, p := range l.pairs(item, key) {
				switch p.key {
				case "name":
					if p.val.Kind == yaml.ScalarNode {
						name = strings.TrimSpace(p.val.Value)
					}
				case "alwaysLoad", "always_load":
					pinned = l.boolean(p.val, key+"."+p.key, false)
				case "description":
				default:
					l.warn(key+"."+p.key, "unknown setting, ignored; a tools entry takes name and alwaysLoad")
				}
			}
			switch {
			case name == "":
				l.warn(key, "has no name; ignored. Write {name: TOOL, alwaysLoad: true}")
			case pinned:
				pins = append(pins, name)
			}
		}
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			l.warn("tools", "expected a mapping such as {tool_search: {enabled: auto}}; ignored")
		}
	default:
		l.warn("tools", "expected a mapping such as {tool_search: {enabled: auto}}; ignored")
	}
	return toolSearch, pins
}

// pin applies a top-level tools list: each pinned name gets defer_loading false on every
// server (or, for a qualified name "server__tool", on that server), unless the server's
// own configs already say otherwise.
func (l *loader) pin(cfg *Config, pins []string) {
	for _, name := range pins {
		server, tool, qualified := strings.Cut(name, "__")
		found := false
		if qualified {
			for i := range cfg.Servers {
				if cfg.Servers[i].Name == server {
					found = true
					pinTool(&cfg.Servers[i].Rules, tool)
				}
			}
		}
		if found {
			continue
		}
		for i := range cfg.Servers {
			pinTool(&cfg.Servers[i].Rules, name)
		}
	}
}

func pinTool(r *policy.ServerRules, tool string) {
	c := r.Configs[tool]
	if c.DeferLoading != nil {
		return
	}
	c.DeferLoading = ptr(false)
	if r.Configs == nil {
		r.Configs = map[string]policy.ToolConfig{}
	}
	r.Configs[tool] = c
}

// toolSearch reads the Hermes tool_search section with policy.ParseToolSearch.
func (l *loader) toolSearch(cfg *Config, n *yaml.Node, key string) {
	ts, warns, err := policy.ParseToolSearch(n, key)
	l.warns = append(l.warns, warns...)
	if err != nil {
		l.warn(key, "%v; using the defaults", err)
		ts = policy.DefaultConfig()
	}
	cfg.ToolSearch = ts
}

// pair is one entry of a mapping node.
type pair struct {
	key string
	val *yaml.Node
}

// pairs returns the entries of a mapping in order, with aliases resolved and YAML merge
// keys (<<: *base) applied. A key given twice keeps its first value, with a Warning.
func (l *loader) pairs(m *yaml.Node, path string) []pair {
	return l.mergedPairs(m, path, map[*yaml.Node]bool{})
}

// mergedPairs is pairs; visited holds the mappings already merged in, so that a mapping
// reached through many aliases is read once (no exponential blow-up, no cycles).
func (l *loader) mergedPairs(m *yaml.Node, path string, visited map[*yaml.Node]bool) []pair {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode || visited[m] {
		return nil
	}
	visited[m] = true
	var out []pair
	first := map[string]int{} // key -> line
	var merged []pair
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := deref(m.Content[i]), deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			where := path
			if where == "" {
				where = "(top level)"
			}
			l.warn(where, "line %d: a key must be a plain string; entry ignored", k.Line)
			continue
		}
		if k.Tag == "!!merge" {
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, src := range srcs {
				merged = append(merged, l.mergedPairs(src, path, visited)...)
			}
			continue
		}
		if line, dup := first[k.Value]; dup {
			l.warn(join(path, k.Value), "given twice (lines %d and %d); the first is used, remove the other", line, k.Line)
			continue
		}
		first[k.Value] = k.Line
		out = append(out, pair{k.Value, v})
	}
	for _, p := range merged {
		if _, ok := first[p.key]; !ok {
			first[p.key] = 0
			out = append(out, p)
		}
	}
	return out
}

// deref resolves YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindName names a node's kind for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "empty"
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "not a value"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// boolOf reads a boolean: YAML/JSON true and false, and the strings true, false, yes,
// no, on and off in any case.
func boolOf(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "true", "yes", "on":
		return true, n.Tag == "!!bool" || n.Tag == "!!str"
	case "false", "no", "off":
		return false, n.Tag == "!!bool" || n.Tag == "!!str"
	}
	return false, false
}

// boolean reads a boolean setting, falling back to def with a Warning.
func (l *loader) boolean(n *yaml.Node, key string, def bool) bool {
	if b, ok := boolOf(n); ok {
		return b
	}
	l.warn(key, "%s is not true or false; using %t", describe(n), def)
	return def
}

// intOf reads a whole number; underscores between digits are allowed (200_000).
func intOf(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" && n.Tag != "!!str" {
		return 0, false
	}
	i, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(n.Value), "_", ""))
	return i, err == nil
}

// positiveInt reads a whole number of at least 1, falling back to def with a Warning.
func (l *loader) positiveInt(n *yaml.Node, key string, def int, want string) int {
	if i, ok := intOf(n); ok && i >= 1 {
		return i
	}
	l.warn(key, "%s is not a whole number of at least 1 (%s); using %d", describe(n), want, def)
	return def
}

// describe quotes a value for messages.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

// str reads a string value: any scalar (numbers and booleans as written, null as "").
func str(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

// text reads a value that must be a string: a YAML or JSON string (null as ""). Unlike
// str, it refuses numbers and booleans: a command, an address or a directory written
// as 5 or true is a mistake, and running "5" would only fail later, less clearly.
func text(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!null" {
		return "", false
	}
	return str(n)
}

// stringList reads a string or a list of strings.
func stringList(n *yaml.Node) ([]string, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, true
		}
		return []string{n.Value}, true
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			item = deref(item)
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, false
			}
			out = append(out, item.Value)
		}
		return out, true
	}
	return nil, false
}

func ptr[T any](v T) *T { return &v }
