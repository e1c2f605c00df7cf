package config_test

import (
	"fmt"
	"log"

	"github.com/toolshed/toolshed/gateway/config"
)

// Parse reads the .mcp.json a client already has. A broken server is left out with a
// warning; the others load.
func Example() {
	src := `{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp",
      "headers": {"Authorization": "Bearer ${TOOLSHED_EXAMPLE_TOKEN:-dev-token}"}
    },
    "github__mirror": {"command": "npx", "args": ["mirror-server"]}
  }
}`
	cfg, warns, err := config.Parse([]byte(src), ".mcp.json")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.Servers {
		fmt.Printf("%s %s %s%s %v\n", s.Name, s.Type, s.Command, s.URL, s.Headers)
	}
	for _, w := range warns {
		fmt.Println("warning:", w.Key)
	}
	fmt.Println("tool search:", cfg.ToolSearch.Enabled, "at", cfg.ToolSearch.ThresholdPct, "% of", cfg.ContextWindow)
	// Output:
	// github stdio npx map[]
	// sentry http https://mcp.sentry.dev/mcp map[Authorization:Bearer dev-token]
	// warning: mcpServers.github__mirror
	// tool search: auto at 10 % of 200000
}

func ExampleLoad() {
	cfg, warns, err := config.Load("testdata/claude_desktop_config.json")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.Servers {
		fmt.Println(s.Name, s.Command, s.Args)
	}
	fmt.Println(len(warns), "warnings")
	// Output:
	// filesystem npx [-y @modelcontextprotocol/server-filesystem /Users/alice/Desktop /Users/alice/Downloads]
	// github npx [-y @modelcontextprotocol/server-github]
	// brave-search npx [-y @modelcontextprotocol/server-brave-search]
	// sqlite uvx [mcp-server-sqlite --db-path /Users/alice/test.db]
	// memory npx [-y @modelcontextprotocol/server-memory]
	// 0 warnings
}
