package lint

import (
	"fmt"
	"sort"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/tokens"
)

// costliest reports the n definitions that cost the most tokens.
func costliest(snap *catalog.Snapshot, n int) []Finding {
	if n <= 0 || snap.Len() == 0 {
		return nil
	}
	tools := append([]*catalog.Tool(nil), snap.Tools()...)
	sort.SliceStable(tools, func(i, j int) bool { return snap.ToolTokens(tools[i]) > snap.ToolTokens(tools[j]) })
	total := snap.Tokens()
	var out []Finding
	for rank, t := range tools[:min(n, len(tools))] {
		cost := snap.ToolTokens(t)
		out = append(out, Finding{Severity: Info, Check: CheckTokens, Tool: t.Qualified, Server: t.Server,
			Message: fmt.Sprintf("the definition costs %d tokens (%s), number %d of %d tools and %s of the catalog's %d", cost, tokens.Encoding, rank+1, snap.Len(), percent.OfText(cost, total), total),
			Fix:     "shorten long descriptions and enum lists, describe shared structures once ($defs), and keep examples out of the schema; or keep the tool deferred behind tool search"})
	}
	return out
}
