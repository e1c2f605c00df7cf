package policy_test

import (
	"fmt"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
)

func ExampleParseConfig() {
	cfg, warnings, err := policy.ParseConfig([]byte(`
tools:
  tool_search:
    enabled: on
    threshold_pct: 15
    max_search_limit: 99   # out of range: falls back to 20
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %g%% default=%d max=%d\n", cfg.Enabled, cfg.ThresholdPct, cfg.SearchDefaultLimit, cfg.MaxSearchLimit)
	for _, w := range warnings {
		fmt.Println("warning:", w.Key)
	}
	// Output:
	// on 15% default=5 max=20
	// warning: tools.tool_search.max_search_limit
}

func ExampleConfig_Limit() {
	cfg := policy.DefaultConfig()
	fmt.Println(cfg.Limit(0, false), cfg.Limit(3, true), cfg.Limit(0, true), cfg.Limit(500, true))
	// Output: 5 3 1 20
}

func ExampleDecide() {
	sources, _ := catalog.Parse([]byte(`{"servers": [
	  {"name": "github", "tools": [
	    {"name": "create_issue", "description": "Create an issue."},
	    {"name": "search_code", "description": "Search code.", "_meta": {"anthropic/alwaysLoad": true}}
	  ]},
	  {"name": "slack", "tools": [{"name": "post_message", "description": "Post a message."}]},
	  {"name": "admin", "tools": [{"name": "drop_database", "description": "Drop the database."}]}
	]}`), "example", "default")
	snap, _ := catalog.Build(sources)

	cfg := policy.DefaultConfig()
	cfg.Enabled = policy.On
	plan := policy.Decide(snap, policy.Input{
		Config: cfg,
		Scope:  policy.Scope{Servers: []string{"github", "slack"}},
	})
	fmt.Println("active:", plan.Active)
	for _, t := range plan.Visible {
		fmt.Println("listed:", t.Qualified)
	}
	for _, t := range plan.Deferred {
		fmt.Println("deferred:", t.Qualified)
	}
	_, err := plan.Lookup("admin__drop_database")
	fmt.Println(err)
	// Output:
	// active: true
	// listed: github__search_code
	// deferred: github__create_issue
	// deferred: slack__post_message
	// unknown tool "admin__drop_database"
}
