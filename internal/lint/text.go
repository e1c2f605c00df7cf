package lint

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
)

// minDescriptionWords is the fewest words a description needs to be found by what it
// says rather than by its tool's name alone: "Returns the sum of two numbers" has six.
const minDescriptionWords = 5

// whenToUse matches the words by which a description says when to use its tool ("Use
// this when...", "Useful for...", "If you need...") or gives an example of its use.
var whenToUse = regexp.MustCompile(`(?i)\b(use|used|using|uses|when|whenever|if|useful|helpful|ideal|best for|instead|before|after|for example|e\.g\.|such as|in order to)\b`)

// checkText checks what t says about itself: its description and its parameters'
// descriptions, and whether its schema can check arguments.
func checkText(t *catalog.Tool, schemas *bridge.SchemaChecker) []Finding {
	var out []Finding
	f := func(sev Severity, check, msg, fix string) {
		out = append(out, Finding{Severity: sev, Check: check, Tool: t.Qualified, Server: t.Server, Message: msg, Fix: fix})
	}
	desc := strings.TrimSpace(t.SearchDescription())
	switch words := len(strings.Fields(desc)); {
	case desc == "":
		f(Error, CheckDescription, "the tool has no description, so search can find it only by its name and a model must guess what it does",
			"describe in a sentence or two what the tool does, on what, and when to use it")
	case words < minDescriptionWords:
		f(Warning, CheckDescription, fmt.Sprintf("the description %q has %d word(s), too few for a search to match what users ask for", bridge.Snippet(desc, 80), words),
			fmt.Sprintf("describe in at least %d words what the tool does, on what, and when to use it", minDescriptionWords*2))
	case !whenToUse.MatchString(desc):
		f(Info, CheckWhenToUse, "the description says what the tool does but not when to use it",
			"add a sentence such as \"Use this when ...\" that tells a model which requests the tool answers, and which it does not")
	}
	var bare []string
	for _, p := range t.Params {
		if strings.TrimSpace(p.Description) == "" {
			bare = append(bare, p.Name)
		}
	}
	if len(bare) > 0 {
		f(Warning, CheckParams, fmt.Sprintf("%d of %d parameters have no description: %s", len(bare), len(t.Params), strings.Join(bare, ", ")),
			"describe each parameter: what it holds, its format, and an example value")
	}
	// What the Anthropic API refuses in a schema, whether or not it compiles (a property
	// name with "ñ" compiles): Claude Code leaves such a tool out.
	api := apiSchemaProblem(t)
	refused := ""
	if api != "" {
		refused = "; " + api + ": the Anthropic API refuses the tool, so Claude Code leaves it out and no model there can use it"
	}
	if err := schemas.Problem(t); err != nil {
		fix := "fix the input schema in the server so that it compiles as JSON Schema (every $ref resolves inside the schema)"
		if api != "" {
			fix = apiSchemaFix(api)
		}
		f(Error, CheckSchema, err.Error()+refused, fix)
	} else if api != "" {
		f(Error, CheckSchema, "its input schema"+refused, apiSchemaFix(api))
	}
	return out
}
