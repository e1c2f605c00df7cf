package lint

import (
	"bufio"
	"fmt"
	"io"

	"github.com/toolshed/toolshed/internal/percent"
)

// WriteText writes r for people: a summary line, self-retrieval figures, then the
// findings grouped by severity and check, each group with how to fix its findings.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "toolshed lint: %d tools on %d servers: %s, %s, %s\n", r.Tools, r.Servers,
		plural(r.Errors, "error"), plural(r.Warnings, "warning"), plural(r.Infos, "note"))
	fmt.Fprintf(b, "\nSelf-retrieval: each tool searched for with its own words among all %d tools\n", r.Tools)
	for _, s := range r.Retrieval {
		if s.Tools == 0 {
			fmt.Fprintf(b, "  %-12s no tool has one\n", s.Query)
			continue
		}
		fmt.Fprintf(b, "  %-12s first for %d of %d (%s), in the top %d for %d (%s)\n", s.Query,
			s.Top1, s.Tools, pct(s.Top1, s.Tools), selfRetrievalTopN, s.Top5, pct(s.Top5, s.Tools))
	}
	for i := 0; i < len(r.Findings); {
		j := i
		for j < len(r.Findings) && r.Findings[j].Severity == r.Findings[i].Severity && r.Findings[j].Check == r.Findings[i].Check {
			j++
		}
		group := r.Findings[i:j]
		sameFix := true
		for _, f := range group {
			sameFix = sameFix && f.Fix == group[0].Fix
		}
		fmt.Fprintf(b, "\n%s %s: %s\n", group[0].Severity, group[0].Check, plural(len(group), "finding"))
		if sameFix {
			fmt.Fprintf(b, "  fix: %s\n", group[0].Fix)
		}
		for _, f := range group {
			tool := f.Tool
			if tool == "" {
				tool = f.Server
			}
			fmt.Fprintf(b, "  %s: %s\n", tool, f.Message)
			if !sameFix {
				fmt.Fprintf(b, "    fix: %s\n", f.Fix)
			}
		}
		i = j
	}
	return b.Flush()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func pct(n, of int) string { return percent.OfText(n, of) }
