package toolsearch

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/search"
)

func TestCheckQuery(t *testing.T) {
	tests := []struct {
		name string
		kind string
		q    string
		want error  // nil for a good query
		say  string // part of the message
	}{
		{"regex", KindRegex, "github.*issue", nil, ""},
		{"regex of exactly 200 characters", KindRegex, strings.Repeat("a", 200), nil, ""},
		{"regex of 201 characters", KindRegex, strings.Repeat("a", 201), ErrQueryTooLong, "the pattern is 201 characters and the limit is 200"},
		{"regex of 200 two-byte characters", KindRegex, strings.Repeat("é", 200), nil, ""},
		{"regex of 201 two-byte characters", KindRegex, strings.Repeat("é", 201), ErrQueryTooLong, "201 characters"},
		{"lookahead", KindRegex, "(?=create)create_issue", ErrBadPattern, "lookahead"},
		{"negative lookbehind", KindRegex, "(?<!list_)issue", ErrBadPattern, "negative lookbehind"},
		{"backreference", KindRegex, `(a)\1`, ErrBadPattern, "backreference"},
		{"unbalanced", KindRegex, "issue(", ErrBadPattern, "not a valid regular expression"},
		{"python end of text", KindRegex, `issue\Z`, nil, ""},
		{"empty regex", KindRegex, "", ErrEmptyQuery, "give a regular expression"},
		{"spaces are a regex", KindRegex, " ", nil, ""},
		{"regex tool name as kind", RegexToolName, "a(", ErrBadPattern, ""},
		{"regex tool type as kind", "tool_search_tool_regex_20251119", strings.Repeat("a", 201), ErrQueryTooLong, ""},
		{"bm25", KindBM25, "create a github issue", nil, ""},
		{"bm25 of exactly 500 characters", KindBM25, strings.Repeat("x", 500), nil, ""},
		{"bm25 of 501 characters", KindBM25, strings.Repeat("x", 501), ErrQueryTooLong, "the query is 501 characters and the limit is 500"},
		{"bm25 of 500 three-byte characters", KindBM25, strings.Repeat("検", 500), nil, ""},
		{"bm25 is not a pattern", KindBM25, "(?=a", nil, ""},
		{"empty bm25", KindBM25, "", ErrEmptyQuery, "describe the tool you need"},
		{"blank bm25", KindBM25, " \t\n", ErrEmptyQuery, ""},
		{"bm25 tool type as kind", "tool_search_tool_bm25_20251119", strings.Repeat("x", 501), ErrQueryTooLong, ""},
		{"client tool name as kind", ClientToolName, "", ErrEmptyQuery, ""},
		{"unknown kind", "fuzzy", "x", ErrUnknownKind, `use "regex" or "bm25"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckQuery(tc.kind, tc.q)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckQuery(%q, %.20q...) = %v, want nil", tc.kind, tc.q, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("CheckQuery(%q, %.20q...) = %v, want %v", tc.kind, tc.q, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %q does not say %q", err, tc.say)
			}
			// A bad query is what the API answers with invalid_tool_input; a bad kind is
			// the caller's mistake.
			if got, want := errors.Is(err, search.ErrInvalidToolInput), tc.want != ErrUnknownKind; got != want {
				t.Errorf("errors.Is(err, search.ErrInvalidToolInput) = %v, want %v", got, want)
			}
		})
	}
}

// TestCheckQueryAgreesWithSearch checks that a query CheckQuery accepts is one toolshed's
// search accepts, and the other way round.
func TestCheckQueryAgreesWithSearch(t *testing.T) {
	ix := search.NewIndex(testSnapshot(t))
	for _, q := range []string{"", " ", "issue", "(?=a)", "a(", strings.Repeat("a", 200), strings.Repeat("a", 201), strings.Repeat("b ", 250), strings.Repeat("b ", 250) + "c"} {
		_, regexErr := ix.Regex(q, search.Options{})
		if got, want := CheckQuery(KindRegex, q) == nil, regexErr == nil; got != want {
			t.Errorf("regex %.30q: CheckQuery accepts it: %v; search accepts it: %v", q, got, want)
		}
		_, bm25Err := ix.Search(q, search.Options{})
		if got, want := CheckQuery(KindBM25, q) == nil, bm25Err == nil; got != want {
			t.Errorf("bm25 %.30q: CheckQuery accepts it: %v; search accepts it: %v", q, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("create an issue ", 40) // 640 characters
	tests := []struct {
		q    string
		max  int
		want string
	}{
		{"create issue", 500, "create issue"},
		{"create issue", 12, "create issue"},
		{"create issue", 10, "create iss"}, // no word boundary in the last quarter
		{"one two three four five six seven eight", 37, "one two three four five six seven"},
		{"créer un ticket", 9, "créer un"},
		{"abcdef", 3, "abc"},
		{"abc", 0, ""},
	}
	for _, tc := range tests {
		if got := Truncate(tc.q, tc.max); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.q, tc.max, got, tc.want)
		}
	}
	cut := Truncate(long, MaxQueryLen)
	if n := utf8.RuneCountInString(cut); n > MaxQueryLen || n < MaxQueryLen*3/4 {
		t.Errorf("Truncate to %d gave %d characters", MaxQueryLen, n)
	}
	if err := CheckQuery(KindBM25, cut); err != nil {
		t.Errorf("a truncated query fails the check: %v", err)
	}
	if !strings.HasSuffix(cut, "issue") {
		t.Errorf("the cut is not at a word boundary: %q", cut[len(cut)-20:])
	}
}
