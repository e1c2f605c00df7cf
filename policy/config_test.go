package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/policy"
)

// cfg returns the defaults with f applied, so each case states only what it changes.
func cfg(f func(*policy.Config)) policy.Config {
	c := policy.DefaultConfig()
	if f != nil {
		f(&c)
	}
	return c
}

func TestDefaultConfig(t *testing.T) {
	want := policy.Config{Enabled: policy.Auto, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200}
	if got := policy.DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v (the Hermes defaults, and 200 tokens of listing)", got, want)
	}
}

func TestParseConfig(t *testing.T) {
	type warn struct {
		key string
		// in is text the message must contain (the bad value, the value used), if any.
		in []string
	}
	tests := []struct {
		name  string
		in    string
		want  policy.Config
		warns []warn
	}{
		{
			name: "full Hermes form under tools.tool_search",
			in: `
tools:
  tool_search:
    enabled: on
    threshold_pct: 25
    search_default_limit: 7
    max_search_limit: 30
`,
			want: policy.Config{Enabled: policy.On, ThresholdPct: 25, SearchDefaultLimit: 7, MaxSearchLimit: 30, ListingTokens: 200},
		},
		{
			name: "top-level tool_search next to a tools key without it",
			in:   "tools:\n  terminal: {timeout: 5}\ntool_search: off\n",
			want: policy.Config{Enabled: policy.Off, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200},
		},
		{
			name: "top-level tool_search next to an empty tools key",
			in:   "tools:\ntool_search: off\n",
			want: policy.Config{Enabled: policy.Off, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20, ListingTokens: 200},
		},
		{
			name: "blank input with tabs is the defaults",
			in:   "\t\n \t \n",
			want: policy.DefaultConfig(),
		},
		{
			name: "other keys of the document are ignored without warnings",
			in: `
model: claude
tools:
  terminal: {timeout: 30}
  tool_search:
    enabled: off
    threshold_pct: 12.5
mcpServers: {github: {command: gh}}
`,
			want: cfg(func(c *policy.Config) { c.Enabled, c.ThresholdPct = policy.Off, 12.5 }),
		},
		{
			name: "top-level tool_search mapping",
			in:   "tool_search:\n  enabled: on\n  max_search_limit: 50\n",
			want: cfg(func(c *policy.Config) { c.Enabled, c.MaxSearchLimit = policy.On, 50 }),
		},
		{
			name: "legacy tools.tool_search: true means auto",
			in:   "tools:\n  tool_search: true\n",
			want: cfg(nil),
		},
		{
			name: "legacy tools.tool_search: false means off",
			in:   "tools:\n  tool_search: false\n",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
		},
		{
			name: "legacy top-level tool_search: true means auto",
			in:   "tool_search: true\n",
			want: cfg(nil),
		},
		{
			name: "legacy top-level tool_search: false means off",
			in:   "tool_search: false\n",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
		},
		{
			name: "enabled: on",
			in:   "tools: {tool_search: {enabled: on}}",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.On }),
		},
		{
			name: "enabled: off",
			in:   "tools: {tool_search: {enabled: off}}",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
		},
		{
			name: "enabled: auto",
			in:   "tools: {tool_search: {enabled: auto, threshold_pct: 3}}",
			want: cfg(func(c *policy.Config) { c.ThresholdPct = 3 }),
		},
		{
			name: "enabled: AUTO is case-insensitive",
			in:   "tools: {tool_search: {enabled: AUTO, search_default_limit: 3}}",
			want: cfg(func(c *policy.Config) { c.SearchDefaultLimit = 3 }),
		},
		{
			name: "enabled: On is case-insensitive",
			in:   "tools: {tool_search: {enabled: On}}",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.On }),
		},
		{
			name: "enabled: true means auto",
			in:   "tools: {tool_search: {enabled: true, max_search_limit: 9}}",
			want: cfg(func(c *policy.Config) { c.MaxSearchLimit = 9 }),
		},
		{
			name: "enabled: false means off",
			in:   "tools: {tool_search: {enabled: false}}",
			want: cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
		},
		{
			name: "threshold_pct bounds 0 and 100 are allowed",
			in:   "tool_search: {threshold_pct: 0}",
			want: cfg(func(c *policy.Config) { c.ThresholdPct = 0 }),
		},
		{
			name: "threshold_pct 100",
			in:   "tool_search: {threshold_pct: 100}",
			want: cfg(func(c *policy.Config) { c.ThresholdPct = 100 }),
		},
		{
			name: "max_search_limit bounds 1 and 50 are allowed",
			in:   "tool_search: {max_search_limit: 1, search_default_limit: 1}",
			want: cfg(func(c *policy.Config) { c.MaxSearchLimit, c.SearchDefaultLimit = 1, 1 }),
		},

		// Invalid values fall back to their default, each with a warning naming its key,
		// while the valid values beside them still apply.
		{
			name:  "enabled: sometimes",
			in:    "tools:\n  tool_search:\n    enabled: sometimes\n    threshold_pct: 15\n",
			want:  cfg(func(c *policy.Config) { c.ThresholdPct = 15 }),
			warns: []warn{{"tools.tool_search.enabled", []string{"sometimes", "auto"}}},
		},
		{
			name:  "enabled: a mapping",
			in:    "tools:\n  tool_search:\n    enabled: {mode: on}\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search.enabled", nil}},
		},
		{
			name:  "threshold_pct: -1",
			in:    "tools:\n  tool_search:\n    enabled: on\n    threshold_pct: -1\n",
			want:  cfg(func(c *policy.Config) { c.Enabled = policy.On }),
			warns: []warn{{"tools.tool_search.threshold_pct", []string{"-1", "10"}}},
		},
		{
			name:  "threshold_pct: 101",
			in:    "tools:\n  tool_search:\n    threshold_pct: 101\n    max_search_limit: 40\n",
			want:  cfg(func(c *policy.Config) { c.MaxSearchLimit = 40 }),
			warns: []warn{{"tools.tool_search.threshold_pct", []string{"101"}}},
		},
		{
			name:  "threshold_pct: ten",
			in:    "tools:\n  tool_search:\n    threshold_pct: ten\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search.threshold_pct", []string{"ten"}}},
		},
		{
			name:  "threshold_pct: NaN",
			in:    "tools:\n  tool_search:\n    threshold_pct: NaN\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search.threshold_pct", nil}},
		},
		{
			name:  "search_default_limit: 0",
			in:    "tools:\n  tool_search:\n    search_default_limit: 0\n    enabled: off\n",
			want:  cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
			warns: []warn{{"tools.tool_search.search_default_limit", []string{"0", "5"}}},
		},
		{
			name:  "search_default_limit: x",
			in:    "tools:\n  tool_search:\n    search_default_limit: x\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search.search_default_limit", []string{"x"}}},
		},
		{
			name:  "max_search_limit: 0",
			in:    "tools:\n  tool_search:\n    max_search_limit: 0\n    search_default_limit: 4\n",
			want:  cfg(func(c *policy.Config) { c.SearchDefaultLimit = 4 }),
			warns: []warn{{"tools.tool_search.max_search_limit", []string{"0", "20"}}},
		},
		{
			name:  "max_search_limit: 51",
			in:    "tools:\n  tool_search:\n    max_search_limit: 51\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search.max_search_limit", []string{"51", "50"}}},
		},
		{
			name:  "unknown key",
			in:    "tools:\n  tool_search:\n    enabeld: on\n    threshold_pct: 5\n",
			want:  cfg(func(c *policy.Config) { c.ThresholdPct = 5 }),
			warns: []warn{{"tools.tool_search.enabeld", []string{"unknown"}}},
		},
		{
			name:  "top-level invalid value is keyed from the top level",
			in:    "tool_search:\n  threshold_pct: 200\n",
			want:  cfg(nil),
			warns: []warn{{"tool_search.threshold_pct", nil}},
		},
		{
			name:  "tool_search: [1,2]",
			in:    "tools:\n  tool_search: [1, 2]\n",
			want:  cfg(nil),
			warns: []warn{{"tools.tool_search", nil}},
		},
		{
			name:  "top-level tool_search: [1,2]",
			in:    "tool_search: [1,2]\n",
			want:  cfg(nil),
			warns: []warn{{"tool_search", nil}},
		},
		{
			name:  "legacy scalar that is neither a bool nor a mode",
			in:    "tool_search: maybe\n",
			want:  cfg(nil),
			warns: []warn{{"tool_search", []string{"maybe"}}},
		},
		{
			name: "several invalid values warn once each, in document order",
			in: `
tools:
  tool_search:
    enabled: sometimes
    threshold_pct: ten
    search_default_limit: x
    max_search_limit: 51
    colour: blue
`,
			want: cfg(nil),
			warns: []warn{
				{"tools.tool_search.enabled", nil},
				{"tools.tool_search.threshold_pct", nil},
				{"tools.tool_search.search_default_limit", nil},
				{"tools.tool_search.max_search_limit", nil},
				{"tools.tool_search.colour", nil},
			},
		},
		{
			name:  "search_default_limit above max_search_limit is clamped",
			in:    "tools:\n  tool_search:\n    search_default_limit: 12\n    max_search_limit: 8\n",
			want:  cfg(func(c *policy.Config) { c.SearchDefaultLimit, c.MaxSearchLimit = 8, 8 }),
			warns: []warn{{"tools.tool_search.search_default_limit", []string{"12", "8"}}},
		},
		{
			name:  "search_default_limit above the default max_search_limit is clamped",
			in:    "tool_search: {search_default_limit: 30}",
			want:  cfg(func(c *policy.Config) { c.SearchDefaultLimit = 20 }),
			warns: []warn{{"tool_search.search_default_limit", []string{"30", "20"}}},
		},

		// Documents without tool search settings.
		{name: "empty input", in: "", want: cfg(nil)},
		{name: "whitespace only", in: "  \n\n   \n", want: cfg(nil)},
		{name: "comments only", in: "# nothing here\n", want: cfg(nil)},
		{name: "no tool_search anywhere", in: "model: claude\ntools:\n  terminal: true\n", want: cfg(nil)},

		// The listing of tool_search's description.
		{name: "listing_tokens", in: "tool_search: {listing_tokens: 80}\n", want: cfg(func(c *policy.Config) { c.ListingTokens = 80 })},
		{name: "listing_tokens off", in: "tool_search: {listing_tokens: 0}\n", want: cfg(func(c *policy.Config) { c.ListingTokens = 0 })},
		{name: "listing_tokens too many", in: "tool_search: {listing_tokens: 5000}\n", want: cfg(nil), warns: []warn{{"tool_search.listing_tokens", []string{"from 0 to 2000"}}}},

		// JSON is YAML.
		{
			name: "JSON input",
			in:   `{"tools": {"tool_search": {"enabled": "on", "threshold_pct": 5, "search_default_limit": 3, "max_search_limit": 10}}}`,
			want: policy.Config{Enabled: policy.On, ThresholdPct: 5, SearchDefaultLimit: 3, MaxSearchLimit: 10, ListingTokens: 200},
		},
		{
			name: "JSON legacy form",
			in:   `{"tool_search": false}`,
			want: cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
		},
		{
			name:  "JSON with an invalid value",
			in:    `{"tool_search": {"max_search_limit": 0, "enabled": "off"}}`,
			want:  cfg(func(c *policy.Config) { c.Enabled = policy.Off }),
			warns: []warn{{"tool_search.max_search_limit", nil}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns, err := policy.ParseConfig([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseConfig: unexpected error %v", err)
			}
			if got != tt.want {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
			if len(warns) != len(tt.warns) {
				t.Fatalf("got %d warnings %q, want %d", len(warns), warns, len(tt.warns))
			}
			for i, w := range tt.warns {
				if warns[i].Key != w.key {
					t.Errorf("warning %d key = %q, want %q", i, warns[i].Key, w.key)
				}
				if strings.TrimSpace(warns[i].Message) == "" {
					t.Errorf("warning %d has no message", i)
				}
				for _, s := range w.in {
					if !strings.Contains(warns[i].Message, s) {
						t.Errorf("warning %d message %q does not mention %q", i, warns[i].Message, s)
					}
				}
				if s := warns[i].String(); s != warns[i].Key+": "+warns[i].Message {
					t.Errorf("warning %d String() = %q, want key: message", i, s)
				}
			}
		})
	}
}

func TestParseConfigNotYAML(t *testing.T) {
	for _, in := range []string{
		"tools: [unclosed",
		"tools:\n  tool_search:\n    enabled: on\n   bad: indent\n",
		"{\"tool_search\": {\"enabled\": \"on\"",
		"tools: {tool_search: {enabled: on}",
		"tools:\n\t- x\n",
	} {
		t.Run(in, func(t *testing.T) {
			got, warns, err := policy.ParseConfig([]byte(in))
			if !errors.Is(err, policy.ErrConfig) {
				t.Fatalf("err = %v, want an error wrapping policy.ErrConfig", err)
			}
			if got != policy.DefaultConfig() {
				t.Errorf("config = %+v, want the defaults %+v", got, policy.DefaultConfig())
			}
			if len(warns) != 0 {
				t.Errorf("warnings = %q, want none", warns)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    policy.Mode
		wantErr bool
	}{
		{in: "auto", want: policy.Auto},
		{in: "on", want: policy.On},
		{in: "off", want: policy.Off},
		{in: "AUTO", want: policy.Auto},
		{in: "On", want: policy.On},
		{in: " off\n", want: policy.Off},
		{in: "", wantErr: true},
		{in: "sometimes", wantErr: true},
		{in: "true", wantErr: true},
		{in: "o n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := policy.ParseMode(tt.in)
			if tt.wantErr {
				if !errors.Is(err, policy.ErrConfig) {
					t.Fatalf("ParseMode(%q) err = %v, want one wrapping ErrConfig", tt.in, err)
				}
				if !strings.Contains(err.Error(), tt.in) {
					t.Errorf("error %q does not quote the input", err)
				}
				if got != "" {
					t.Errorf("ParseMode(%q) = %q on error, want \"\"", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseMode(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestConfigLimit(t *testing.T) {
	c := policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 4, MaxSearchLimit: 12}
	tests := []struct {
		name      string
		requested int
		asked     bool
		want      int
	}{
		{"not asked gives the default", 0, false, 4},
		{"not asked ignores the number", 9, false, 4},
		{"within range", 7, true, 7},
		{"one", 1, true, 1},
		{"exactly max", 12, true, 12},
		{"zero becomes one", 0, true, 1},
		{"negative becomes one", -3, true, 1},
		{"most negative becomes one", -1 << 62, true, 1},
		{"above max becomes max", 13, true, 12},
		{"far above max becomes max", 1 << 40, true, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Limit(tt.requested, tt.asked); got != tt.want {
				t.Errorf("Limit(%d, %t) = %d, want %d", tt.requested, tt.asked, got, tt.want)
			}
		})
	}
}
