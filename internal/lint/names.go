package lint

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/catalog"
)

// MaxPortableNameLen is the longest tool name every major client takes whole: OpenAI's
// function names stop at 64 characters, and Gemini CLI cuts an MCP tool's name (with
// its mcp_SERVER_ prefix) at 63.
const MaxPortableNameLen = 64

// checkNames checks t's names against the clients' rules: length, characters, and
// whether a model can tell which service the tool belongs to.
func checkNames(byName map[string][]*catalog.Tool, t *catalog.Tool) []Finding {
	var out []Finding
	f := func(sev Severity, check, msg, fix string, related ...string) {
		out = append(out, Finding{Severity: sev, Check: check, Tool: t.Qualified, Server: t.Server, Message: msg, Fix: fix, Related: related})
	}
	switch n := len(t.Name); {
	case n > MaxPortableNameLen:
		f(Error, CheckNameLength, fmt.Sprintf("the name %q is %d characters; OpenAI's function names stop at %d and Gemini CLI cuts MCP tool names at 63, so the tool is refused or renamed", t.Name, n, MaxPortableNameLen),
			fmt.Sprintf("shorten the tool's name in the server to at most %d characters (fewer leaves room for a server prefix)", MaxPortableNameLen))
	case len(t.Qualified) > MaxPortableNameLen:
		f(Warning, CheckNameLength, fmt.Sprintf("the qualified name %q is %d characters, more than the %d OpenAI and Gemini CLI take whole", t.Qualified, len(t.Qualified), MaxPortableNameLen),
			"give the server a shorter name in the config, or serve with --max-name-length so long names are cut with a hash")
	}
	if bad := badNameChars(t.Name); bad != "" {
		f(Error, CheckNameChars, fmt.Sprintf("the name %q has %s, which the model APIs refuse in tool names (Anthropic and OpenAI take only letters, digits, '_' and '-'); toolshed lists it as %s, other clients may drop it", t.Name, bad, t.Qualified),
			"rename the tool in the server with only letters, digits, '_' and '-'")
	}
	if others := othersNamed(byName, t); len(others) > 0 {
		f(Warning, CheckNamePrefix, fmt.Sprintf("%d other server(s) have a tool named %q; a client that lists bare names (or a model reading them) cannot tell them apart", len(others), t.Name),
			fmt.Sprintf("prefix the name with the service (%s_%s), or keep toolshed's qualified names (no --no-prefix)", servicePrefix(t.Server), t.Name), others...)
	} else if words := nameWords(t.Name); len(words) == 1 {
		f(Info, CheckNamePrefix, fmt.Sprintf("the name %q is one generic word with no service in it", t.Name),
			fmt.Sprintf("name the service and the object, such as %s_%s", servicePrefix(t.Server), t.Name))
	}
	return out
}

// othersNamed returns the qualified names of the tools of other servers with t's bare
// name.
func othersNamed(byName map[string][]*catalog.Tool, t *catalog.Tool) []string {
	var out []string
	for _, o := range byName[t.Name] {
		if o != t && o.Name == t.Name && o.Server != t.Server {
			out = append(out, o.Qualified)
		}
	}
	return out
}

// badNameChars describes the characters of name outside [A-Za-z0-9_-], or "".
func badNameChars(name string) string {
	var bad []string
	seen := map[rune]bool{}
	for _, r := range name {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') || seen[r] {
			continue
		}
		seen[r] = true
		switch {
		case r == ' ':
			bad = append(bad, "a space")
		case unicode.IsPrint(r):
			bad = append(bad, fmt.Sprintf("%q", string(r)))
		default:
			bad = append(bad, fmt.Sprintf("%U", r))
		}
	}
	return strings.Join(bad, ", ")
}

// servicePrefix is the server's name as a name prefix.
func servicePrefix(server string) string {
	return strings.ToLower(strings.ReplaceAll(server, "-", "_"))
}

// nameWords splits a name into its lowercase words: snake_case, kebab-case, dotted and
// camelCase.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}
