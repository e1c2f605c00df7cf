package stats

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolshed/toolshed/internal/percent"
)

// maxNeverSurfacedText bounds the tools never surfaced that the text lists: a large
// catalog can have hundreds, which would bury the rest of the report.
const maxNeverSurfacedText = 30

// WriteText writes the report as text for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "toolshed stats: %s\n\n", r.windowText())
	if r.Searches == 0 && r.Calls == 0 {
		b.WriteString("The search log has no searches or calls in this window.\n")
		_, err := w.Write(b.Bytes())
		return err
	}

	line := func(name, n, what string) {
		fmt.Fprintln(&b, strings.TrimRight(fmt.Sprintf("%-16s %8s  %s", name, n, what), " "))
	}
	what := "in " + count(r.Sessions) + " " + plural(r.Sessions, "session", "sessions")
	if r.FailedSearches > 0 {
		what += ", " + count(r.FailedSearches) + " failed"
	}
	line("Searches", count(r.Searches), what)
	line("  empty results", count(r.EmptySearches), percent.Text(r.EmptyPct)+" of searches")
	line("  likely misses", count(r.Misses.Count), fmt.Sprintf("%s of %s judged: the session called none of the tools returned",
		percent.Text(r.Misses.Pct), count(r.Misses.Judged)))
	line("Calls", count(r.Calls), "")
	line(fmt.Sprintf("  ranked below %d", LowRank), count(r.LowRank.Count), percent.Text(r.LowRank.Pct)+" of calls: the tool came back 4th or lower")
	line("  not surfaced", count(r.Unsurfaced.Count), percent.Text(r.Unsurfaced.Pct)+" of calls: no search of the session returned the tool")
	if u := r.UnknownTools; u.Count > 0 {
		line("  unknown tools", count(u.Count), percent.Text(u.Pct)+" of calls: they named no tool the session could see, so no server")
	}
	if t := r.Tokens; t.Searches > 0 {
		line("Tokens saved", count64(t.Saved), fmt.Sprintf("%s of the catalog's cost, %s a search", percent.Text(t.SavedPct), count64(t.PerSearch)))
	}

	b.WriteString("\nLatency\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcount\tp50\tp90\tp99\tmax\t")
	for _, l := range []struct {
		name string
		l    Latency
	}{{"search", r.SearchLatency}, {"call", r.CallLatency}} {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t\n", l.name, count(l.l.Count), msText(l.l.P50Ms), msText(l.l.P90Ms), msText(l.l.P99Ms), msText(l.l.MaxMs))
	}
	tw.Flush()

	toolTable(&b, "Most called tools", r.TopTools, false)
	if len(r.Servers) > 0 {
		b.WriteString("\nServers\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  calls\terrors\ttimeouts\tp50\t server")
		for _, s := range r.Servers {
			fmt.Fprintf(tw, "  %s\t%s (%s)\t%s (%s)\t%s\t %s\n", count(s.Calls), count(s.Errors), percent.Text(s.ErrorPct), count(s.Timeouts), percent.Text(s.TimeoutPct), msText(s.P50Ms), show(s.Server))
		}
		tw.Flush()
	}

	if len(r.Misses.Queries) > 0 {
		b.WriteString("\nLikely missed queries\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, q := range r.Misses.Queries {
			fmt.Fprintf(tw, "  %s\t %s\n", count(q.Count), quoteQuery(q.Query))
		}
		tw.Flush()
	}
	toolTable(&b, fmt.Sprintf("Calls of tools ranked below %d", LowRank), r.LowRank.Tools, true)
	toolTable(&b, "Calls of tools no search returned", r.Unsurfaced.Tools, false)
	toolTable(&b, "Calls of unknown tools (no server)", r.UnknownTools.Tools, false)

	ns := r.NeverSurfaced
	switch {
	case !ns.Catalog:
		b.WriteString("\nTools never surfaced: not listed, no catalog was given (pass --config FILE or --catalog FILE)\n")
	case ns.Count == 0:
		fmt.Fprintf(&b, "\nTools never surfaced: none; searches returned every one of the catalog's %s tools\n", count(ns.CatalogTools))
	default:
		fmt.Fprintf(&b, "\nTools never surfaced: %s of the catalog's %s\n", count(ns.Count), count(ns.CatalogTools))
		for _, t := range ns.Tools[:min(len(ns.Tools), maxNeverSurfacedText)] {
			fmt.Fprintf(&b, "  %s\n", show(t))
		}
		if more := len(ns.Tools) - maxNeverSurfacedText; more > 0 {
			fmt.Fprintf(&b, "  … and %s more (--json and --html list them all)\n", count(more))
		}
	}

	b.WriteString("\nSuggested overrides")
	switch {
	case len(r.Suggestions) > 0:
		b.WriteString(": words of the queries that missed a tool the session then called, which its ")
		if ns.Catalog {
			b.WriteString("name and description lack")
		} else {
			b.WriteString("name lacks (without a catalog its description is unknown)")
		}
		b.WriteString(". Check them, then paste into the config:\n\n")
		b.WriteString(Overrides(r.Suggestions))
	case r.HashedQueries+r.UnrecordedQueries == r.Searches:
		b.WriteString(": none, the log holds no query text (queries are hashed or not recorded)\n")
	default:
		b.WriteString(": none, no query that missed a tool its session then called has words the tool lacks\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// toolTable writes a titled table of tools, with their median rank when ranked.
func toolTable(b *bytes.Buffer, title string, tools []ToolCalls, ranked bool) {
	if len(tools) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s\n", title)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if ranked {
		fmt.Fprintln(tw, "  calls\terrors\trank\t tool")
	} else {
		fmt.Fprintln(tw, "  calls\terrors\t tool")
	}
	for _, t := range tools {
		if ranked {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t %s\n", count(t.Calls), count(t.Errors), t.MedianRank, show(t.Tool))
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t %s\n", count(t.Calls), count(t.Errors), show(t.Tool))
		}
	}
	tw.Flush()
}

// Overrides renders suggestions as the overrides section of a toolshed YAML config.
func Overrides(sgs []Suggestion) string {
	var b strings.Builder
	b.WriteString("overrides:\n")
	for _, s := range sgs {
		fmt.Fprintf(&b, "  # missed by %d %s: %s\n", s.Misses, plural(s.Misses, "search", "searches"), quoteList(s.Queries))
		fmt.Fprintf(&b, "  - tools: %s\n", strconv.Quote(s.Tool))
		kw := make([]string, len(s.Keywords))
		for i, k := range s.Keywords {
			kw[i] = strconv.Quote(k)
		}
		fmt.Fprintf(&b, "    keywords: [%s]\n", strings.Join(kw, ", "))
	}
	return b.String()
}

func (r *Report) windowText() string {
	if r.Since.IsZero() {
		return "no records"
	}
	const layout = "2006-01-02 15:04 UTC"
	return fmt.Sprintf("%s to %s (%s)", r.Since.Format(layout), r.Until.Format(layout), spanText(r.Until.Sub(r.Since)))
}

func spanText(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.3g days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.3g hours", d.Hours())
	case d >= 2*time.Minute:
		return fmt.Sprintf("%.3g minutes", d.Minutes())
	default:
		return d.Round(time.Second).String()
	}
}

// quoteQuery shows a query as recorded: in quotes, a hash shortened (and shown as
// show shows a name: a "hash" is whatever a record says, not always hex).
func quoteQuery(q string) string {
	if isHashed(q) {
		return show(q[:min(len(q), len("sha256:")+12)]) + "… (hashed)"
	}
	return strconv.Quote(q)
}

// show is how the reports show a string of the log (a tool, a server, a hashed query's
// head), which a client or an upstream chose: unchanged when every character of it is
// graphic, and otherwise quoted as Go quotes it, control and format characters and
// bytes that are not UTF-8 escaped. A name can then neither move the cursor, clear the
// screen, set the window title nor reverse the text around it, in a terminal or in a
// page someone cats; and the quotes tell such a name from a plain one. The JSON report
// keeps the strings exact.
func show(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

func quoteList(qs []string) string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = quoteQuery(q)
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count writes n with thousands separators.
func count(n int) string { return count64(int64(n)) }

func count64(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// msText writes a latency in the unit that reads best.
func msText(ms float64) string {
	switch {
	case ms == 0:
		return "-"
	case ms < 1:
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + "µs"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + "s"
	}
}
