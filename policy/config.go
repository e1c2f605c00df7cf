// Package policy decides what a session's model sees: whether tool search is on, which
// tools are listed directly and which are deferred behind the bridge, and which tools a
// session may use at all. It holds no state: a Plan is computed from a catalog snapshot
// and the settings at every assembly, so it never drifts from the live tool lists.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mode says when tool search is on.
type Mode string

// The modes of tools.tool_search.enabled.
const (
	// Auto turns tool search on when the deferrable tools' definitions reach
	// ThresholdPct percent of the model's context window.
	Auto Mode = "auto"
	// On always defers what can be deferred and shows the bridge.
	On Mode = "on"
	// Off lists every tool directly.
	Off Mode = "off"
)

// ParseMode reads a mode name, case-insensitively.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case Auto, On, Off:
		return m, nil
	}
	return "", fmt.Errorf("%w: %q is not a tool search mode; use auto, on or off", ErrConfig, s)
}

// Config is the tool_search section of a Hermes-style configuration. The zero value is
// not the default; use DefaultConfig.
type Config struct {
	// Enabled is the mode.
	Enabled Mode
	// ThresholdPct is the share of the context window (0 to 100) the deferrable tools
	// must reach for Auto to turn tool search on.
	ThresholdPct float64
	// SearchDefaultLimit is the number of results tool_search returns when no limit is
	// asked for.
	SearchDefaultLimit int
	// MaxSearchLimit is the most results one tool_search may return (1 to 50).
	MaxSearchLimit int
	// ListingTokens is how many tokens of tool_search's description may name the
	// servers behind it, each with its tool count and the words its tools' names use
	// most (see bridge.Definitions): what a model does not know exists it does not
	// search for. 0 names none (the count of tools and the first server names only).
	ListingTokens int
}

// Defaults, as Hermes Agent ships them.
const (
	DefaultThresholdPct       = 10
	DefaultSearchDefaultLimit = 5
	DefaultMaxSearchLimit     = 20
	// MaxSearchLimitCap is the highest max_search_limit a config may set.
	MaxSearchLimitCap = 50
	// DefaultListingTokens is the default listing_tokens, and MaxListingTokens the
	// most a config may set.
	DefaultListingTokens = 200
	MaxListingTokens     = 2000
	// UnknownWindowThreshold is the deferrable-token count at which Auto turns tool
	// search on when the model's context window is not known: 10% of 200,000.
	UnknownWindowThreshold = 20000
)

// DefaultConfig returns the defaults: auto, 10%, 5 results, at most 20, 200 tokens of
// listing.
func DefaultConfig() Config {
	return Config{Enabled: Auto, ThresholdPct: DefaultThresholdPct, SearchDefaultLimit: DefaultSearchDefaultLimit, MaxSearchLimit: DefaultMaxSearchLimit, ListingTokens: DefaultListingTokens}
}

// withDefaults fills in what c leaves unset: the zero Config is DefaultConfig, and in a
// partly set one an empty mode is Auto and zero limits are the default limits.
// ThresholdPct 0 is a real setting (tool search on as soon as anything is deferrable),
// so it is only defaulted along with everything else.
func (c Config) withDefaults() Config {
	if c == (Config{}) {
		return DefaultConfig()
	}
	if c.Enabled == "" {
		c.Enabled = Auto
	}
	if c.MaxSearchLimit <= 0 {
		c.MaxSearchLimit = DefaultMaxSearchLimit
	}
	if c.SearchDefaultLimit <= 0 {
		c.SearchDefaultLimit = min(DefaultSearchDefaultLimit, c.MaxSearchLimit)
	}
	return c
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("invalid configuration")

// Limit returns the number of results for a tool_search that asked for requested
// results (asked reports whether it asked at all): the default when it did not, else the
// request clamped to 1..MaxSearchLimit.
func (c Config) Limit(requested int, asked bool) int {
	if !asked {
		return c.SearchDefaultLimit
	}
	return min(max(requested, 1), c.MaxSearchLimit)
}

// Warning reports a configuration value that was not usable and what was used instead.
// A typo in a config file must not stop an agent, so such values fall back to defaults.
type Warning struct {
	// Key is the dotted path of the value, such as "tools.tool_search.threshold_pct".
	Key string
	// Message says what was wrong and what is used instead.
	Message string
}

func (w Warning) String() string { return w.Key + ": " + w.Message }

// ParseConfig reads the tool_search settings from a YAML (or JSON) document:
//
//	tools:
//	  tool_search:
//	    enabled: auto          # auto | on | off
//	    threshold_pct: 10      # 0-100
//	    search_default_limit: 5
//	    max_search_limit: 20   # 1-50
//	    listing_tokens: 200    # 0-2000
//
// The legacy form `tool_search: true` means {enabled: auto} and `false` means off, and
// tool_search may also stand at the top level. Every value that is wrong falls back to
// its default with a Warning; other keys of the document are ignored, as they belong to
// other readers. Only a document that is not YAML at all is an error.
func ParseConfig(data []byte) (Config, []Warning, error) {
	cfg := DefaultConfig()
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, nil, fmt.Errorf("%w: not YAML: %v", ErrConfig, err)
	}
	if len(doc.Content) == 0 {
		return cfg, nil, nil
	}
	root := doc.Content[0]
	node, key := mapValue(mapValue(root, "tools"), "tool_search"), "tools.tool_search"
	if node == nil {
		node, key = mapValue(root, "tool_search"), "tool_search"
	}
	if node == nil {
		return cfg, nil, nil
	}
	return ParseToolSearch(node, key)
}

// ParseToolSearch reads a tool_search node that is already parsed (for config files that
// hold more than tool search); key is its dotted path for warnings.
func ParseToolSearch(node *yaml.Node, key string) (Config, []Warning, error) {
	cfg := DefaultConfig()
	var warns []Warning
	warn := func(k, format string, args ...any) {
		warns = append(warns, Warning{Key: k, Message: fmt.Sprintf(format, args...)})
	}
	switch node.Kind {
	case yaml.ScalarNode:
		switch b, ok := boolValue(node); {
		case ok && b:
			cfg.Enabled = Auto
		case ok:
			cfg.Enabled = Off
		default:
			if m, err := ParseMode(node.Value); err == nil {
				cfg.Enabled = m
			} else {
				warn(key, "%q is neither true, false nor a mode (auto, on, off); using auto", node.Value)
			}
		}
		return cfg, warns, nil
	case yaml.MappingNode:
	default:
		warn(key, "expected a mapping such as {enabled: auto}; using the defaults")
		return cfg, warns, nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i].Value, node.Content[i+1]
		path := key + "." + k
		switch k {
		case "enabled":
			if b, ok := boolValue(v); ok {
				cfg.Enabled = Off
				if b {
					cfg.Enabled = Auto
				}
			} else if m, err := ParseMode(v.Value); err == nil && v.Kind == yaml.ScalarNode {
				cfg.Enabled = m
			} else {
				warn(path, "%q is not auto, on or off; using auto", v.Value)
			}
		case "threshold_pct":
			f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v.Value), "%"), 64)
			if v.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || f < 0 || f > 100 {
				warn(path, "%q is not a percentage from 0 to 100; using %d", v.Value, DefaultThresholdPct)
			} else {
				cfg.ThresholdPct = f
			}
		case "search_default_limit":
			if n, ok := intValue(v); ok && n >= 1 {
				cfg.SearchDefaultLimit = n
			} else {
				warn(path, "%q is not a whole number of at least 1; using %d", v.Value, DefaultSearchDefaultLimit)
			}
		case "max_search_limit":
			if n, ok := intValue(v); ok && n >= 1 && n <= MaxSearchLimitCap {
				cfg.MaxSearchLimit = n
			} else {
				warn(path, "%q is not a whole number from 1 to %d; using %d", v.Value, MaxSearchLimitCap, DefaultMaxSearchLimit)
			}
		case "listing_tokens":
			if n, ok := intValue(v); ok && n >= 0 && n <= MaxListingTokens {
				cfg.ListingTokens = n
			} else {
				warn(path, "%q is not a whole number from 0 to %d; using %d", v.Value, MaxListingTokens, DefaultListingTokens)
			}
		default:
			warn(path, "unknown setting, ignored; tool_search takes enabled, threshold_pct, search_default_limit, max_search_limit and listing_tokens")
		}
	}
	if cfg.SearchDefaultLimit > cfg.MaxSearchLimit {
		warn(key+".search_default_limit", "%d is above max_search_limit %d; using %d", cfg.SearchDefaultLimit, cfg.MaxSearchLimit, cfg.MaxSearchLimit)
		cfg.SearchDefaultLimit = cfg.MaxSearchLimit
	}
	return cfg, warns, nil
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

func boolValue(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, false
	}
	b, err := strconv.ParseBool(strings.ToLower(n.Value))
	return b, err == nil
}

func intValue(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimSpace(n.Value))
	return i, err == nil
}
