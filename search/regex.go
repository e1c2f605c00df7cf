package search

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// DefaultRegexBudget is how long a regex search may run before it stops with
// ExecutionTimeExceeded. RE2 matching is linear in the text, so only a pattern that
// matches almost nothing literal over a very large catalog gets near it.
const DefaultRegexBudget = 100 * time.Millisecond

// The fields a regex is tried on, best first; a tool ranks by the first that matches.
var regexFields = [...]string{"name", "title", "description", "parameter", "server"}

// Regex finds tools whose name, title, description, parameter names, descriptions or
// enum values, or server name match pattern, case-insensitively, the way Python's
// re.search matches anywhere in a string. Tools matching in their name come first, then
// title, description, parameters and server; ties keep catalog order.
//
// Patterns are limited to MaxPatternLen characters and to what RE2 supports, which runs in
// time linear in the text: lookarounds, backreferences, atomic groups, possessive
// quantifiers and conditionals are InvalidToolInput errors naming the construct. A search
// that runs past opts.Budget stops with ExecutionTimeExceeded.
func (ix *Index) Regex(pattern string, opts Options) ([]Result, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	rt := ix.regexSource()
	return ix.regex(c, opts, rt, rt.trigrams())
}

// regexSource returns the tools' text for regex search, folding it on first use.
func (ix *Index) regexSource() *regexText {
	ix.regexOnce.Do(func() { ix.regexText = newRegexText(ix.snap.Tools()) })
	return ix.regexText
}

// regex searches for c over rt, with the candidates tg gives, or every tool if tg is
// nil.
func (ix *Index) regex(c *compiledRegex, opts Options, rt *regexText, tg *trigrams) ([]Result, error) {
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultRegexBudget
	}
	deadline := time.Now().Add(budget)
	limit := opts.limit()
	n := ix.snap.Len()
	// Candidates: the tools whose text may have the literals every match contains.
	cands, all := []int32(nil), true
	if tg != nil {
		s := ix.scratch()
		cands, all = tg.candidates(c.need, n, s.bits)
		ix.release(s)
	}
	count := len(cands)
	if all {
		count = n
	}
	// Results rank by the field that matched, then catalog order, so the fields are
	// tried one at a time over all candidates and the search stops once limit is met.
	var out []Result
	done := make([]bool, count)
	checked := 0
	for field := range regexFields {
		for i := range count {
			d := int32(i)
			if !all {
				d = cands[i]
			}
			if done[i] || !opts.Allow.Has(int(d)) {
				continue
			}
			if checked++; checked&63 == 0 && time.Now().After(deadline) {
				return nil, Errorf(ExecutionTimeExceeded, "the pattern ran longer than %v over %d tools; make it more specific (add literal words, or anchor it with ^ or $) and retry", budget, ix.snap.Len())
			}
			if !rt.mayMatch(d, field, c.need) {
				continue
			}
			t := ix.snap.Tool(int(d))
			if matchField(c.re, t, field) {
				done[i] = true
				out = append(out, Result{Tool: t, Score: float64(len(regexFields) - field), Match: MatchRegex, Field: regexFields[field]})
				if len(out) == limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// matchField reports whether re matches field number f (an index in regexFields) of t.
func matchField(re *regexp.Regexp, t *catalog.Tool, f int) bool {
	switch f {
	case 0:
		return re.MatchString(t.Name) || re.MatchString(t.Qualified)
	case 1:
		return t.SearchTitle() != "" && re.MatchString(t.SearchTitle())
	case 2:
		return re.MatchString(t.SearchDescription())
	case 3:
		for _, p := range t.Params {
			if re.MatchString(p.Name) || p.Description != "" && re.MatchString(p.Description) {
				return true
			}
			for _, v := range p.Enum {
				if re.MatchString(v) {
					return true
				}
			}
		}
		return false
	default:
		return re.MatchString(t.Server)
	}
}

// CompileRegex checks and compiles a tool-search pattern: Python re syntax as far as RE2
// shares it, matched case-insensitively.
func CompileRegex(pattern string) (*regexp.Regexp, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return c.re, nil
}

// compiledRegex is a pattern compiled for search: the expression, and the literal text
// every match contains (see literals).
type compiledRegex struct {
	re   *regexp.Regexp
	need [][]string
}

// compileRegex is CompileRegex, with the literal analysis for search.
func compileRegex(pattern string) (*compiledRegex, error) {
	if pattern == "" {
		return nil, Errorf(InvalidToolInput, "the pattern is empty; give a regular expression such as \"github.*issue\"")
	}
	if n := utf8.RuneCountInString(pattern); n > MaxPatternLen {
		return nil, Errorf(InvalidToolInput, "the pattern is %d characters; the limit is %d, so match a shorter distinctive part of the name or description", n, MaxPatternLen)
	}
	if construct := unsupportedConstruct(pattern); construct != "" {
		return nil, Errorf(InvalidToolInput, "the pattern uses %s, which this regular-expression engine (RE2, linear-time) does not support; rewrite the pattern without it", construct)
	}
	expr := "(?i)" + translatePython(pattern)
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		msg := err.Error()
		if se, ok := err.(*syntax.Error); ok {
			msg = se.Code.String() + ": `" + strings.TrimPrefix(se.Expr, "(?i)") + "`"
		}
		return nil, Errorf(InvalidToolInput, "the pattern is not a valid regular expression (%s); fix it and retry", msg)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, Errorf(InvalidToolInput, "the pattern is not a valid regular expression (%v); fix it and retry", err)
	}
	return &compiledRegex{re: re, need: selective(literals(tree.Simplify()).required())}, nil
}

// translatePython rewrites the Python spellings RE2 writes differently: \Z (end of text)
// is RE2's \z, and the quantifier {,n} is {0,n}.
func translatePython(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			if p[i+1] == 'Z' && !inClass {
				b.WriteString(`\z`)
			} else {
				b.WriteByte(c)
				b.WriteByte(p[i+1])
			}
			i++
			continue
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
			continue
		case c == ']' && inClass:
			inClass = false
		case c == '{' && !inClass && i+1 < len(p) && p[i+1] == ',':
			b.WriteString("{0")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unsupportedConstruct names the first Python-only construct in p, or returns "".
func unsupportedConstruct(p string) string {
	inClass := false
	quantified := false // the previous token was a quantifier
	for i := 0; i < len(p); i++ {
		c := p[i]
		wasQuantified := quantified
		quantified = false
		if c == '\\' {
			if i+1 < len(p) && !inClass && p[i+1] >= '1' && p[i+1] <= '9' {
				return "a backreference `\\" + string(p[i+1]) + "`"
			}
			i++
			continue
		}
		if inClass {
			if c == ']' {
				inClass = false
			}
			continue
		}
		switch c {
		case '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case '*', '?':
			if c == '?' && i > 0 && p[i-1] == '(' {
				break
			}
			quantified = true
		case '}':
			quantified = closesRepeat(p, i)
		case '+':
			if wasQuantified {
				return "a possessive quantifier `" + string(p[i-1]) + "+`"
			}
			quantified = true
		case '(':
			rest := p[i+1:]
			for prefix, name := range map[string]string{
				"?=": "a lookahead `(?=...)`", "?!": "a negative lookahead `(?!...)`",
				"?<=": "a lookbehind `(?<=...)`", "?<!": "a negative lookbehind `(?<!...)`",
				"?>": "an atomic group `(?>...)`", "?P=": "a named backreference `(?P=name)`",
				"?(": "a conditional group `(?(...)...)`", "?#": "a comment group `(?#...)`",
			} {
				if strings.HasPrefix(rest, prefix) {
					return name
				}
			}
			// A flag group, (?flags) or (?flags:...), may use only RE2's flags i, m, s
			// and U; Python's a, L, u and x have no equivalent. Named groups, (?P<n>...)
			// and (?<n>...), are not flag groups.
			if strings.HasPrefix(rest, "?") {
				j := 1
				for j < len(rest) && (isLetterByte(rest[j]) || rest[j] == '-') {
					j++
				}
				if j > 1 && j < len(rest) && (rest[j] == ')' || rest[j] == ':') {
					if k := strings.IndexAny(rest[1:j], "aLux"); k >= 0 {
						return "the inline flag `" + string(rest[1+k]) + "` in `(" + rest[:j+1] + "`"
					}
				}
			}
		}
	}
	return ""
}

// closesRepeat reports whether the '}' at p[i] ends a repetition {m}, {m,} or {m,n}
// (or Python's {,n}); any other '}' is a literal.
func closesRepeat(p string, i int) bool {
	j := strings.LastIndexByte(p[:i], '{')
	if j < 0 || j == i-1 {
		return false
	}
	for _, c := range []byte(p[j+1 : i]) {
		if !isDigit(c) && c != ',' {
			return false
		}
	}
	return true
}

func isLetterByte(c byte) bool { return asciiClass[c]&(clsLower|clsUpper) != 0 }
