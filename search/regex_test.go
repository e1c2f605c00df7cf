package search_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/search"
)

// fieldCatalog has one tool matching "zeta" in each field, in the reverse of the order
// in which they rank.
const fieldCatalog = `{"servers": [
 {"name": "r", "tools": [
  {"name": "alpha", "description": "Nothing here.", "inputSchema": {"type": "object", "properties": {"p": {"type": "string", "description": "Has the word Zeta."}}}},
  {"name": "beta", "description": "Mentions ZETA in the description."},
  {"name": "gamma", "title": "The Zeta Title", "description": "Nothing."},
  {"name": "delta", "description": "Nothing.", "inputSchema": {"type": "object", "properties": {"zeta_count": {"type": "integer"}}}},
  {"name": "zeta_tool", "description": "Nothing."},
  {"name": "omega", "description": "No match at all."}
 ]},
 {"name": "zeta", "tools": [
  {"name": "plain", "description": "Nothing."}
 ]}
]}`

func TestRegexFieldRanking(t *testing.T) {
	ix := search.NewIndex(catalogtest.Snapshot(t, fieldCatalog))
	results, err := ix.Regex("zeta", search.Options{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	type hit struct {
		name, field string
		score       float64
	}
	var got []hit
	for _, r := range results {
		if r.Match != search.MatchRegex {
			t.Errorf("%s matched by %q", r.Tool.Qualified, r.Match)
		}
		got = append(got, hit{r.Tool.Qualified, r.Field, r.Score})
	}
	// zeta__plain matches in its qualified name, which counts as its name.
	want := []hit{
		{"r__zeta_tool", "name", 5}, {"zeta__plain", "name", 5},
		{"r__gamma", "title", 4},
		{"r__beta", "description", 3},
		{"r__alpha", "parameter", 2}, {"r__delta", "parameter", 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Regex(zeta) =\n%v\nwant\n%v", got, want)
	}
	// Only an anchored pattern reaches the server field.
	results, err = ix.Regex("^zeta$", search.Options{})
	if err != nil || len(results) != 1 || results[0].Tool.Qualified != "zeta__plain" || results[0].Field != "server" || results[0].Score != 1 {
		t.Errorf("Regex(^zeta$) = %+v, %v", results, err)
	}
	// The limit keeps the best.
	results, _ = ix.Regex("zeta", search.Options{Limit: 3})
	if got := names(results); !reflect.DeepEqual(got, []string{"r__zeta_tool", "zeta__plain", "r__gamma"}) {
		t.Errorf("Regex(zeta) limit 3 = %v", got)
	}
	results, _ = ix.Regex("zeta", search.Options{})
	if len(results) != search.DefaultLimit {
		t.Errorf("default limit gave %d results", len(results))
	}
}

func TestRegexMatches(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		pattern string
		want    []string
	}{
		{"FORECAST", []string{"weather__get_forecast"}},
		{"forecast", []string{"weather__get_forecast"}},
		{"(?i)ForeCast", []string{"weather__get_forecast"}},
		{"github.*issue", []string{"github__create_issue", "github__list_issues"}},
		{"^create_", []string{"github__create_issue", "github__create_pull_request", "gitlab__create_issue"}},
		{"_file$", []string{"files__read_file", "files__write_file"}},
		{"read|write", []string{"files__read_file", "files__write_file"}},
		{`\bslack\b`, []string{"slack__send_message", "slack__list_channels"}},
		{"solve\\.quadratic", []string{"calc__solve_quadratic_equation"}},
		{"[0-9]{2}", []string{}},
		{"two-letter", []string{"weather__get_alerts"}},
		{"capture an image", []string{"files__screenshot_capture"}},
		{`issue\Z`, []string{"github__create_issue", "gitlab__create_issue"}},
		{`^get_[a-z]{,6}$`, []string{"weather__get_alerts"}},
		{`^list_[a-z]{,6}$`, []string{"github__list_issues"}},
		{`^list_[a-z]{,5}$`, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			results, err := ix.Regex(tc.pattern, search.Options{Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(results); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Regex(%q) = %v, want %v", tc.pattern, got, tc.want)
			}
		})
	}
}

func TestCompileRegexTranslation(t *testing.T) {
	tests := []struct {
		pattern     string
		match, miss []string
	}{
		{`issue\Z`, []string{"create_issue", "ISSUE"}, []string{"issue_create", "issue\n"}},
		{`ab{,2}c`, []string{"ac", "abc", "xabbcx"}, []string{"abbbc", "ab{,2}c"}},
		{`^ab{,3}c$`, []string{"ac", "abc", "abbbc", "ABBBC"}, []string{"abbbbc", "ab{,3}c"}},
		{`^x{,0}y`, []string{"y"}, []string{"xy"}},
		{`[{,]`, []string{"a,b", "{"}, []string{"ab"}},
		{`\\Z`, []string{`a\z`, `\Z`}, []string{"Z", "a"}},
		{`(?P<id>\d+)`, []string{"42"}, []string{"x"}},
		{`(?P<name>\w+)_issue`, []string{"create_issue"}, []string{"_issue"}},
		{`(?<value>x)`, []string{"X"}, []string{"y"}},
		{`a}+`, []string{"a}", "a}}}"}, []string{"a"}},
		{`a{x}+`, []string{"a{x}", "A{X}}}"}, []string{"ax"}},
		{`(?s)a.b`, []string{"a\nb"}, []string{"ab"}},
		{`(?m)^b`, []string{"a\nb"}, []string{"ab"}},
	}
	for _, tc := range tests {
		re, err := search.CompileRegex(tc.pattern)
		if err != nil {
			t.Errorf("CompileRegex(%q): %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("%q does not match %q", tc.pattern, s)
			}
		}
		for _, s := range tc.miss {
			if re.MatchString(s) {
				t.Errorf("%q matches %q", tc.pattern, s)
			}
		}
	}
}

// TestRegexLiterals checks the literal text a pattern's matches must contain, which
// chooses the candidates and skips fields: folded as the tools' text is, and only what
// every match has.
func TestRegexLiterals(t *testing.T) {
	tests := []struct {
		pattern string
		need    [][]string
	}{
		{"weather", [][]string{{"weather"}}},
		{"WEATHER", [][]string{{"weather"}}},
		{"github.*issue", [][]string{{"github"}, {"issue"}}},
		{"get_(forecast|alerts)", [][]string{{"get_forecast", "get_alerts"}}},
		{"create|delete", [][]string{{"create", "delete"}}},
		{"screenshot|snapshot", [][]string{{"screenshot", "snapshot"}}},
		{"(slack)+", [][]string{{"slack"}}},
		{"[Ss]lack", [][]string{{"slack"}}},
		{"^get_", [][]string{{"get_"}}},
		{"file$", [][]string{{"file"}}},
		{`\bpull request\b`, [][]string{{"pull request"}}},
		{"ab?", [][]string{{"a"}}},
		{"x", [][]string{{"x"}}},
		{"a*", nil},
		{".", nil},
		{"[a-z]+_[a-z]+", [][]string{{"_"}}},
		{"(?:pull){2}_request", [][]string{{"pullpull_request"}}},
		{"ab|c.*d", [][]string{{"ab", "c"}}},
		{"ab|c*", nil},
		{"v[0-9]", [][]string{{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}}},
		{"[a-f][a-f]x", [][]string{{"a", "b", "c", "d", "e", "f"}, {"ax", "bx", "cx", "dx", "ex", "fx"}}},
		{"[a-z]x", [][]string{{"x"}}},
		{"café", [][]string{{"caf"}}},
		{"ÉTÉ", [][]string{{"t"}}},
		{"É", nil},
		{"a\uFFFDb", [][]string{{"a"}, {"b"}}},
		{"Kelvin", [][]string{{"kelvin"}}},
		{`\x{212A}elvin`, [][]string{{"kelvin"}}},
		{"天气", [][]string{{"天气"}}},
		{"(?-i)Slack", [][]string{{"slack"}}},
		{"e.e.e.e.z", [][]string{{"e"}, {"z"}}},
		{"ab.cd.ef.gh.ij.kl.mn.op.qr.stu", [][]string{{"ab"}, {"cd"}, {"ef"}, {"gh"}, {"ij"}, {"kl"}, {"mn"}, {"stu"}}},
	}
	for _, tc := range tests {
		need, err := search.RegexNeed(tc.pattern)
		if err != nil || !reflect.DeepEqual(need, tc.need) {
			t.Errorf("RegexNeed(%q) = %q, %v; want %q", tc.pattern, need, err, tc.need)
		}
	}
}

// TestRegexCaseFolding checks that the literal pre-check does not lose matches that
// case-insensitive matching finds in non-ASCII letters (KELVIN SIGN, LONG S, É for é).
func TestRegexCaseFolding(t *testing.T) {
	snap := catalogtest.Snapshot(t, `{"tools": [{"name": "temp", "description": "Degrees \u212Aelvin"}, {"name": "other", "description": "Fa\u017Ft"}, {"name": "none", "description": "Celsius"}, {"name": "menu", "description": "La carte du café"}]}`)
	ix := search.NewIndex(snap)
	for pattern, want := range map[string]string{"kelvin": "default__temp", "KELVIN": "default__temp", "fast": "default__other", "FAST": "default__other", "CAFÉ": "default__menu", "u c.f": "default__menu"} {
		results, err := ix.Regex(pattern, search.Options{})
		if err != nil || len(results) != 1 || results[0].Tool.Qualified != want {
			t.Errorf("Regex(%q) = %v, %v; want %s", pattern, names(results), err, want)
		}
	}
}

func TestRegexUnsupported(t *testing.T) {
	tests := []struct {
		pattern   string
		construct string
	}{
		{"create(?=_issue)", "a lookahead `(?=...)`"},
		{"create(?!_issue)", "a negative lookahead `(?!...)`"},
		{"(?<=get_)issue", "a lookbehind `(?<=...)`"},
		{"(?<!get_)issue", "a negative lookbehind `(?<!...)`"},
		{`(a)\1`, "a backreference `\\1`"},
		{`(a)(b)\2`, "a backreference `\\2`"},
		{"a(?P=x)", "a named backreference `(?P=name)`"},
		{"(?P<n>b)(?P=n)", "a named backreference `(?P=name)`"},
		{"(?>abc)", "an atomic group `(?>...)`"},
		{"a*+", "a possessive quantifier `*+`"},
		{"a++", "a possessive quantifier `++`"},
		{"a?+", "a possessive quantifier `?+`"},
		{"a{2}+", "a possessive quantifier `}+`"},
		{"(a)?(?(1)b|c)", "a conditional group `(?(...)...)`"},
		{"issue(?#a comment)", "a comment group `(?#...)`"},
		{"(?x) create issue", "the inline flag `x`"},
		{"(?ix)create", "the inline flag `x`"},
		{"(?a)create", "the inline flag `a`"},
		{"(?L)create", "the inline flag `L`"},
		{"(?u)create", "the inline flag `u`"},
		{"(?P<x>a)(?P=x)", "a named backreference `(?P=name)`"},
		{"(?-x:create)", "the inline flag `x`"},
		{"x{2,3}+", "a possessive quantifier `}+`"},
	}
	ix := smallIndex(t)
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			results, err := ix.Regex(tc.pattern, search.Options{})
			if results != nil {
				t.Errorf("results %v alongside an error", names(results))
			}
			var se *search.Error
			if !errors.As(err, &se) || se.Code != search.InvalidToolInput {
				t.Fatalf("err = %v, want InvalidToolInput", err)
			}
			if !strings.Contains(se.Message, "uses "+tc.construct) || !strings.Contains(se.Message, "RE2") {
				t.Errorf("message %q does not name %s", se.Message, tc.construct)
			}
		})
	}
	// The same characters where they are not those constructs are fine.
	for _, p := range []string{`[(?=]`, `\(\?=`, `[\1]x`, `a*`, `a+?`, `a*?`, `(?:abc)+`, `(?i:x)`, `(?s)x`, `[+*]+`, `\++`, `\\1`} {
		if _, err := search.CompileRegex(p); err != nil && strings.Contains(err.Error(), "uses") {
			t.Errorf("CompileRegex(%q) = %v", p, err)
		}
	}
}

func TestRegexInvalid(t *testing.T) {
	tests := []struct {
		pattern string
		message string
	}{
		{"", "the pattern is empty"},
		{strings.Repeat("a", search.MaxPatternLen+1), "the pattern is 201 characters; the limit is 200"},
		{strings.Repeat("é", search.MaxPatternLen+1), "the pattern is 201 characters"},
		{"(", "not a valid regular expression (missing closing ): `(`)"},
		{"create)", "unexpected )"},
		{"[a-", "missing closing ]"},
		{"*a", "missing argument to repetition operator: `*`"},
		{"a{1001}", "invalid repeat count"},
		{`\p{Nope}`, "invalid character class range"},
		{`\q`, "invalid escape sequence: `\\q`"},
		{`[\Z]`, "invalid escape sequence: `\\Z`"},
		{"x**", "invalid nested repetition operator"},
	}
	ix := smallIndex(t)
	for _, tc := range tests {
		t.Run(tc.message, func(t *testing.T) {
			for _, run := range []func() error{
				func() error { _, err := search.CompileRegex(tc.pattern); return err },
				func() error { _, err := ix.Regex(tc.pattern, search.Options{}); return err },
			} {
				err := run()
				var se *search.Error
				if !errors.As(err, &se) || se.Code != search.InvalidToolInput {
					t.Fatalf("err = %v, want InvalidToolInput", err)
				}
				if !strings.Contains(se.Message, tc.message) {
					t.Errorf("message %q lacks %q", se.Message, tc.message)
				}
				if strings.Contains(se.Message, "(?i)") {
					t.Errorf("message %q shows the flag the search added", se.Message)
				}
			}
		})
	}
	for _, p := range []string{strings.Repeat("a", search.MaxPatternLen), strings.Repeat("é", search.MaxPatternLen)} {
		if _, err := ix.Regex(p, search.Options{}); err != nil {
			t.Errorf("a pattern of %d characters: %v", search.MaxPatternLen, err)
		}
	}
}

func TestRegexAllow(t *testing.T) {
	ix := smallIndex(t)
	allowed := setOf(t, ix.Snapshot(), "gitlab__create_issue", "files__read_file")
	results, err := ix.Regex("create|read", search.Options{Allow: allowed, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(results); !reflect.DeepEqual(got, []string{"files__read_file", "gitlab__create_issue"}) {
		t.Errorf("Regex within the set = %v", got)
	}
	results, _ = ix.Regex("issue", search.Options{Allow: catalog.NewSet(ix.Snapshot())})
	if len(results) != 0 {
		t.Errorf("an empty set found %v", names(results))
	}
}

func TestRegexBudget(t *testing.T) {
	ix := builtinIndex(t)
	// A class of private-use characters: no literal for the pre-check, and no match, so
	// every field of every tool is tried.
	const pattern = `[\x{E000}-\x{E0FF}]{2}`
	if need, err := search.RegexNeed(pattern); err != nil || need != nil {
		t.Fatalf("RegexNeed: %q, %v", need, err)
	}
	// With time enough (generous, so that a slow machine or the race detector does not
	// matter) the search completes and finds nothing.
	results, err := ix.Regex(pattern, search.Options{Budget: time.Minute})
	if err != nil || len(results) != 0 {
		t.Fatalf("with a budget of a minute: %v, %v", names(results), err)
	}
	results, err = ix.Regex(pattern, search.Options{Budget: time.Nanosecond})
	var se *search.Error
	if !errors.As(err, &se) || se.Code != search.ExecutionTimeExceeded || !errors.Is(err, search.ErrExecutionTimeExceeded) {
		t.Fatalf("with a 1ns budget: %v, %v; want ExecutionTimeExceeded", names(results), err)
	}
	if results != nil || !strings.Contains(se.Message, "make it more specific") {
		t.Errorf("results %v, message %q", names(results), se.Message)
	}
}

// FuzzRegex checks that CompileRegex never panics, and that a pattern it accepts can be
// searched over a small index, returning only allowed tools.
func FuzzRegex(f *testing.F) {
	for _, p := range []string{
		"weather", "github.*issue", "create|delete", "^get_", "(?i)slack", "file$", `\bpull request\b`,
		"[a-z]+_[a-z]+_[a-z]+", `issue\Z`, `ab{,3}c`, "(?=x)", "(?<!x)", `(a)\1`, "(?P=x)", "(?>a)", "a++",
		"(?(1)a|b)", "(?#c)", "(?x)a", "(", "[", `\`, "a{1001}", "[[:alpha:]]", `\p{Han}+`, "café|天气",
		`\x{212A}`, "(?P<name>x)", "[^]]", "[]a]", "{,", "x{,}", `\Z{,2}`, "((((a))))*", strings.Repeat("a", 201),
	} {
		f.Add(p)
	}
	snap := catalogtest.Snapshot(f, smallCatalog)
	ix := search.NewIndex(snap)
	allowed := setOf(f, snap, "github__create_issue", "slack__send_message", "files__read_file", "weather__get_forecast", "calc__solve_quadratic_equation")
	f.Fuzz(func(t *testing.T, pattern string) {
		re, err := search.CompileRegex(pattern)
		if err != nil {
			var se *search.Error
			if !errors.As(err, &se) || se.Code != search.InvalidToolInput || re != nil {
				t.Fatalf("CompileRegex(%q) = %v, %v", pattern, re, err)
			}
			return
		}
		need, _ := search.RegexNeed(pattern)
		for _, alts := range need {
			for _, lit := range alts {
				if lit == "" || strings.IndexFunc(lit, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 {
					t.Fatalf("RegexNeed(%q) has %q, which is empty or has ASCII capitals", pattern, lit)
				}
			}
		}
		results, err := ix.Regex(pattern, search.Options{Allow: allowed, Limit: 50})
		if err != nil {
			t.Fatalf("Regex(%q) after CompileRegex accepted it: %v", pattern, err)
		}
		for _, r := range results {
			if r.Match != search.MatchRegex || r.Field == "" {
				t.Fatalf("Regex(%q): result %+v", pattern, r)
			}
		}
		want := scanRegex(snap, re, allowed, 50)
		if got := resultFields(results); !slices.Equal(got, want) {
			t.Fatalf("Regex(%q) = %v; trying every tool finds %v", pattern, got, want)
		}
		for _, trigrams := range []bool{false, true} {
			results, err := search.RegexWith(ix, pattern, search.Options{Allow: allowed, Limit: 50}, trigrams)
			if got := resultFields(results); err != nil || !slices.Equal(got, want) {
				t.Fatalf("Regex(%q), trigrams %v = %v, %v; trying every tool finds %v", pattern, trigrams, got, err, want)
			}
		}
	})
}

// A match in the server name alone is found however long the server name is (the
// qualified name is cut at 128 characters and loses the end of a long server name).
func TestRegexLongServerName(t *testing.T) {
	server := strings.Repeat("a", 115) + "-endzulu"
	sources, problems := catalog.Parse([]byte(`{"servers": [{"name": "`+server+`", "tools": [{"name": "tool", "description": "does things"}]}]}`), "test", "")
	snap, more := catalog.Build(sources)
	if len(problems)+len(more) > 0 {
		t.Fatal(problems, more)
	}
	results, err := search.NewIndex(snap).Regex("endzulu", search.Options{})
	if err != nil || len(results) != 1 || results[0].Field != "server" {
		t.Fatalf("Regex(endzulu) = %v, %v; want the tool, matched by its server", results, err)
	}
}

// scanRegex is what Regex must return, found the slow way: every allowed tool tried on
// every field, fields in rank order, as qualified name and field.
func scanRegex(snap *catalog.Snapshot, re *regexp.Regexp, allow *catalog.Set, limit int) []string {
	matches := func(t *catalog.Tool, field string) bool {
		switch field {
		case "name":
			return re.MatchString(t.Name) || re.MatchString(t.Qualified)
		case "title":
			return t.Title != "" && re.MatchString(t.Title)
		case "description":
			return re.MatchString(t.Description)
		case "parameter":
			for _, p := range t.Params {
				if re.MatchString(p.Name) || p.Description != "" && re.MatchString(p.Description) || slices.ContainsFunc(p.Enum, re.MatchString) {
					return true
				}
			}
			return false
		}
		return re.MatchString(t.Server)
	}
	var out []string
	found := map[int]bool{}
	for _, field := range []string{"name", "title", "description", "parameter", "server"} {
		for _, t := range snap.Tools() {
			if allow.Has(t.Index) && !found[t.Index] && matches(t, field) {
				found[t.Index] = true
				if out = append(out, t.Qualified+" "+field); len(out) == limit {
					return out
				}
			}
		}
	}
	return out
}

// resultFields returns results as scanRegex does.
func resultFields(results []search.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Tool.Qualified+" "+r.Field)
	}
	return out
}

// TestRegexMatchesScan holds Regex, which tries only the tools and fields that have a
// pattern's literals, to trying every tool on every field, over the real tools with
// patterns of the shapes models write, made from the tools' own words: both before its
// trigram index is built and with it.
func TestRegexMatchesScan(t *testing.T) {
	snap := benchSnapshot(t, 800)
	ix := search.NewIndex(snap)
	var words []string
	for _, tl := range snap.Tools()[:300] {
		words = append(words, strings.FieldsFunc(tl.Name+" "+tl.Description, func(r rune) bool { return r == ' ' || r == '.' || r == ',' })...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		w := words[rng.IntN(len(words))]
		if len(w) > 4 && rng.IntN(2) == 0 { // a piece of a word, in any case
			i := rng.IntN(len(w) - 3)
			w = w[i : i+3+rng.IntN(len(w)-i-2)]
		}
		if rng.IntN(3) == 0 {
			w = strings.ToUpper(w)
		}
		return regexp.QuoteMeta(w)
	}
	patterns := append([]string{}, "weather", "github.*issue", "create|delete", "^get_", "(?i)slack", "file$",
		`\bpull request\b`, "screenshot|snapshot", "[a-z]+_[a-z]+_[a-z]+", "calendar.*event", "kel.in", "天气|新闻", "x{0}", "ab|c*")
	for range 80 {
		var p string
		switch rng.IntN(7) {
		case 0:
			p = word()
		case 1:
			p = word() + ".*" + word()
		case 2:
			p = word() + "|" + word()
		case 3:
			p = "^" + word()
		case 4:
			p = word() + "$"
		case 5:
			p = `\b` + word() + `\b`
		default:
			p = word() + "[_ -]?" + word()
		}
		patterns = append(patterns, p)
	}
	if raceEnabled {
		patterns = patterns[:30] // the race detector checks the concurrency, not results
	}
	allowed := catalog.NewSet(snap)
	for i := 0; i < snap.Len(); i += 3 {
		allowed.Add(i)
	}
	for _, p := range patterns {
		re, err := search.CompileRegex(p)
		if err != nil {
			t.Fatalf("CompileRegex(%q): %v", p, err)
		}
		for _, allow := range []*catalog.Set{nil, allowed} {
			all := scanRegex(snap, re, allow, search.MaxLimit)
			for _, limit := range []int{5, search.MaxLimit} {
				for _, trigrams := range []bool{false, true} {
					results, err := search.RegexWith(ix, p, search.Options{Allow: allow, Limit: limit, Budget: time.Minute}, trigrams)
					if err != nil {
						t.Fatalf("Regex(%q): %v", p, err)
					}
					if got, want := resultFields(results), all[:min(limit, len(all))]; !slices.Equal(got, want) {
						t.Errorf("Regex(%q, limit %d, trigrams %v) = %v; trying every tool finds %v", p, limit, trigrams, got, want)
					}
				}
			}
		}
	}
}
