// Package lint reports how findable and how usable the tools of a catalog are: whether
// each tool's own words find it by search, which tools of different servers a model
// will confuse, names clients refuse or cut, descriptions too short to match or that do
// not say when to use the tool, parameters without descriptions, schemas that cannot
// be checked, and the definitions that cost the most tokens. Every finding says what
// is wrong and how to fix it. It is the analysis behind toolshed lint; the command only
// loads the catalog and prints the Report.
package lint

import (
	"sort"
	"strconv"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
)

// Severity says how much a finding matters.
type Severity string

// The severities, from the most to the least serious.
const (
	// Error: a client refuses or breaks the tool, or it cannot be used as listed.
	// toolshed lint --strict fails on these, and only on these.
	Error Severity = "error"
	// Warning: the tool is hard to find or easy to confuse with another.
	Warning Severity = "warning"
	// Info: a suggestion that makes the tool easier to pick or cheaper to list.
	Info Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// The checks, as Finding.Check names them.
const (
	CheckLoad           = "load"            // the tool could not be loaded at all
	CheckNameLength     = "name-length"     // a name longer than clients accept
	CheckNameChars      = "name-characters" // characters clients reject
	CheckNamePrefix     = "name-prefix"     // no service prefix: shared or one-word names
	CheckSchema         = "schema"          // an input schema that cannot be compiled
	CheckDescription    = "description"     // missing or too short to match
	CheckWhenToUse      = "when-to-use"     // does not say when to use the tool
	CheckParams         = "parameters"      // parameters without descriptions
	CheckSelfRetrieval  = "self-retrieval"  // its own words do not find it
	CheckNearDuplicate  = "near-duplicate"  // a tool of another server a model will confuse with it
	CheckTokens         = "tokens"          // among the costliest definitions
	CheckEmbed          = "embeddings"      // the config's embedding endpoint does not answer as configured
	selfRetrievalTopN   = 5
	defaultTopTokens    = 5
	maxSelfQueryWords   = 24
	retrievalSearchSize = 50
)

// Finding is one problem with one tool (or with the catalog, when Tool is empty).
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	// Tool is the qualified name (server__tool); Server the server.
	Tool   string `json:"tool,omitempty"`
	Server string `json:"server,omitempty"`
	// Message says what is wrong, Fix how to fix it.
	Message string `json:"message"`
	Fix     string `json:"fix"`
	// Related names the other tools involved (near-duplicates, the tools that outrank
	// a tool for its own words).
	Related []string `json:"related,omitempty"`
}

// Options tune Run. The zero value works.
type Options struct {
	// TopTokens is how many of the costliest definitions to report; 0 means 5, -1
	// none.
	TopTokens int
	// Extra are findings the caller made about what the catalog is served with (the
	// config's embedding endpoint, CheckEmbed), reported with the others.
	Extra []Finding
}

// Report is the result of linting a catalog.
type Report struct {
	Tools   int `json:"tools"`
	Servers int `json:"servers"`
	// Errors, Warnings and Infos count the findings of each severity.
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
	// Retrieval summarizes self-retrieval, one entry per kind of query.
	Retrieval []RetrievalSummary `json:"self_retrieval"`
	// Findings are sorted by severity, check, server and tool.
	Findings []Finding `json:"findings"`
}

// Run lints snap. problems are the catalog's load problems (see catalog.Build): each
// becomes an error finding.
func Run(snap *catalog.Snapshot, problems []catalog.Problem, opts Options) *Report {
	r := &Report{Tools: snap.Len(), Servers: len(snap.Servers()), Findings: []Finding{}}
	for _, p := range problems {
		r.add(Finding{Severity: Error, Check: CheckLoad, Server: p.Server, Tool: problemTool(p),
			Message: p.Err.Error(), Fix: "fix the definition in the server; until then toolshed leaves the tool out"})
	}
	byName := map[string][]*catalog.Tool{}
	for _, t := range snap.Tools() {
		byName[t.Name] = append(byName[t.Name], t)
	}
	var schemas bridge.SchemaChecker // a schema many tools share is compiled once
	for _, t := range snap.Tools() {
		for _, f := range checkNames(byName, t) {
			r.add(f)
		}
		for _, f := range checkText(t, &schemas) {
			r.add(f)
		}
	}
	ix := search.NewIndex(snap)
	var fs []Finding
	r.Retrieval, fs = selfRetrieval(ix)
	for _, f := range fs {
		r.add(f)
	}
	for _, f := range nearDuplicates(snap) {
		r.add(f)
	}
	top := opts.TopTokens
	if top == 0 {
		top = defaultTopTokens
	}
	for _, f := range costliest(snap, top) {
		r.add(f)
	}
	for _, f := range opts.Extra {
		r.add(f)
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.Severity != b.Severity {
			return a.Severity.rank() < b.Severity.rank()
		}
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.Check == CheckTokens {
			return false // costliest first, as reported
		}
		if a.Server != b.Server {
			return a.Server < b.Server
		}
		return a.Tool < b.Tool
	})
	return r
}

func (r *Report) add(f Finding) {
	switch f.Severity {
	case Error:
		r.Errors++
	case Warning:
		r.Warnings++
	default:
		r.Infos++
	}
	r.Findings = append(r.Findings, f)
}

// problemTool names the tool of a load problem as a qualified name when it can.
func problemTool(p catalog.Problem) string {
	if p.Tool == "" || p.Server == "" {
		return p.Tool
	}
	if name, err := strconv.Unquote(p.Tool); err == nil {
		return catalog.Qualify(p.Server, name)
	}
	return p.Server + " tool " + p.Tool // "#2": a tool without a usable name
}
