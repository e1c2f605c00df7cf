package lint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

func TestNameWords(t *testing.T) {
	for in, want := range map[string][]string{
		"create_issue":            {"create", "issue"},
		"get-resource-links":      {"get", "resource", "links"},
		"getFileContents":         {"get", "file", "contents"},
		"HTTPRequest":             {"http", "request"},
		"hubspot.list_objects":    {"hubspot", "list", "objects"},
		"sequentialthinking":      {"sequentialthinking"},
		"browser_take_screenshot": {"browser", "take", "screenshot"},
	} {
		if got := nameWords(in); !reflect.DeepEqual(got, want) {
			t.Errorf("nameWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBadNameChars(t *testing.T) {
	for in, want := range map[string]string{
		"create_issue-2": "",
		"get.weather":    `"."`,
		"a b.c.d":        `a space, "."`,
		"naïve":          `"ï"`,
	} {
		if got := badNameChars(in); got != want {
			t.Errorf("badNameChars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSelfQueries(t *testing.T) {
	for _, tc := range []struct {
		name, title, desc string
		want              map[string]string
		echo              string
	}{
		{"create_issue", "", "Create a new issue in a GitHub repository. Use it to report bugs.",
			map[string]string{QueryDescription: "a new in a GitHub repository", QueryName: "create issue"}, ""},
		{"get_me", "Get my user profile", "Get details of the authenticated user.\nMore.",
			map[string]string{QueryDescription: "details of the authenticated user", QueryTitle: "Get my user profile", QueryName: "get me"}, ""},
		{"close_page", "Close page", "Closes the page by its index.",
			map[string]string{QueryName: "close page"}, "Closes the page by its index"},
		{"ping", "", "", map[string]string{QueryName: "ping"}, ""},
	} {
		tool := &catalog.Tool{Name: tc.name, Title: tc.title, Description: tc.desc}
		got, echo := selfQueries(tool)
		if !reflect.DeepEqual(got, tc.want) || echo != tc.echo {
			t.Errorf("selfQueries(%s) = %q, %q; want %q, %q", tc.name, got, echo, tc.want, tc.echo)
		}
	}
}

func build(t *testing.T, servers map[string][]string) *catalog.Snapshot {
	t.Helper()
	var sources []catalog.Source
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if tools, ok := servers[name]; ok {
			src := catalog.Source{Server: name}
			for _, raw := range tools {
				src.Tools = append(src.Tools, json.RawMessage(raw))
			}
			sources = append(sources, src)
		}
	}
	snap, problems := catalog.Build(sources)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return snap
}

func findings(r *Report, check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

func TestRunChecks(t *testing.T) {
	snap := build(t, map[string][]string{
		"alpha": {
			`{"name": "browser_click", "description": "Click an element on the web page; use it to press buttons and follow links.", "inputSchema": {"type": "object", "properties": {"ref": {"type": "string", "description": "The element"}}}}`,
			`{"name": "browser_type", "description": "Type text into an editable element of the page, such as a search box.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}`,
			`{"name": "browser_close", "description": "Close the browser window when the task is done.", "inputSchema": {"type": "object"}}`,
		},
		"beta": {
			`{"name": "click", "description": "Clicks on the provided element in the currently selected page.", "inputSchema": {"type": "object"}}`,
			`{"name": "search", "description": "Search.", "inputSchema": {"type": "object"}}`,
		},
		"gamma": {
			`{"name": "search", "description": "Search the company wiki for pages that mention the words you give.", "inputSchema": {"type": "object"}}`,
		},
	})
	r := Run(snap, nil, Options{TopTokens: -1})
	dups := findings(r, CheckNearDuplicate)
	if len(dups) != 1 || dups[0].Tool != "alpha__browser_click" || !reflect.DeepEqual(dups[0].Related, []string{"beta__click"}) {
		t.Errorf("near-duplicates = %+v, want browser_click with click (the server's prefix word browser aside)", dups)
	}
	var prefix []string
	for _, f := range findings(r, CheckNamePrefix) {
		prefix = append(prefix, string(f.Severity)+" "+f.Tool)
	}
	if want := []string{"warning beta__search", "warning gamma__search", "info beta__click"}; !reflect.DeepEqual(prefix, want) {
		t.Errorf("name-prefix findings = %q, want %q", prefix, want)
	}
	if d := findings(r, CheckDescription); len(d) != 1 || d[0].Tool != "beta__search" || d[0].Severity != Warning {
		t.Errorf("description findings = %+v, want beta__search's one word", d)
	}
	if p := findings(r, CheckParams); len(p) != 1 || p[0].Tool != "alpha__browser_type" || !strings.Contains(p[0].Message, "text") {
		t.Errorf("parameter findings = %+v", p)
	}
	var when []string
	for _, f := range findings(r, CheckWhenToUse) {
		when = append(when, f.Tool)
	}
	if want := []string{"beta__click", "gamma__search"}; !reflect.DeepEqual(when, want) {
		t.Errorf("when-to-use findings = %q, want %q", when, want)
	}
	if r.Errors != 0 || len(findings(r, CheckTokens)) != 0 {
		t.Errorf("errors %d, token findings %d, want none", r.Errors, len(findings(r, CheckTokens)))
	}
	// Sorted: warnings before notes, then by check.
	for i := 1; i < len(r.Findings); i++ {
		a, b := r.Findings[i-1], r.Findings[i]
		if a.Severity.rank() > b.Severity.rank() || a.Severity == b.Severity && a.Check > b.Check {
			t.Errorf("findings out of order: %+v before %+v", a, b)
		}
	}
}

// A tool whose description other tools match better is reported with the tools that
// come first; overrides' keywords make it findable.
func TestSelfRetrievalMiss(t *testing.T) {
	// Tools whose names hold the words of sync_ledger's description come first.
	tools := []string{
		`{"name": "sync_ledger", "description": "Upload invoices, payments and refunds to the accounting system.", "inputSchema": {"type": "object"}}`,
	}
	for _, n := range []string{"upload_invoices", "invoice_payments", "refund_payments", "accounting_upload", "upload_refunds", "payments_accounting", "system_invoices"} {
		tools = append(tools, `{"name": "`+n+`", "description": "Upload invoices, payments and refunds to the accounting system.", "inputSchema": {"type": "object"}}`)
	}
	snap := build(t, map[string][]string{"alpha": tools})
	r := Run(snap, nil, Options{TopTokens: -1})
	var miss *Finding
	for _, f := range findings(r, CheckSelfRetrieval) {
		if f.Tool == "alpha__sync_ledger" {
			miss = &f
		}
	}
	if miss == nil || miss.Severity != Warning || !strings.Contains(miss.Message, "finds it at rank") || len(miss.Related) == 0 {
		t.Fatalf("sync_ledger's own words rank it below others, want a warning naming them: %+v\n%+v", miss, r.Findings)
	}
	if r.Retrieval[0].Query != QueryDescription || r.Retrieval[0].Tools != 8 || r.Retrieval[0].Top5 == 8 {
		t.Errorf("retrieval summary = %+v", r.Retrieval)
	}
}
