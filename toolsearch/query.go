package toolsearch

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolshed/toolshed/search"
)

// The kinds of query CheckQuery knows.
const (
	// KindRegex is a pattern for tool_search_tool_regex.
	KindRegex = "regex"
	// KindBM25 is a natural-language query for tool_search_tool_bm25 or for a Searcher.
	KindBM25 = "bm25"
)

// The Messages API's limits on a search, in characters (Unicode code points).
const (
	// MaxPatternLen is the longest regex pattern.
	MaxPatternLen = search.MaxPatternLen
	// MaxQueryLen is the longest BM25 query.
	MaxQueryLen = search.MaxQueryLen
)

// Errors CheckQuery wraps; test for them with errors.Is. Every one of them but
// ErrUnknownKind also matches search.ErrInvalidToolInput, the error code the API would
// answer with.
var (
	// ErrEmptyQuery: the query or pattern is empty.
	ErrEmptyQuery = errors.New("empty tool search query")
	// ErrQueryTooLong: the query or pattern is over its limit (see Truncate).
	ErrQueryTooLong = errors.New("tool search query too long")
	// ErrBadPattern: the regex pattern does not compile under toolshed's rules.
	ErrBadPattern = errors.New("invalid tool search pattern")
	// ErrUnknownKind: CheckQuery was given a kind other than KindRegex or KindBM25.
	ErrUnknownKind = errors.New("unknown tool search kind")
)

// queryError is a bad query: it wraps its sentinel and search.ErrInvalidToolInput.
type queryError struct {
	sentinel error
	msg      string
}

func (e *queryError) Error() string   { return e.sentinel.Error() + ": " + e.msg }
func (e *queryError) Unwrap() []error { return []error{e.sentinel, search.ErrInvalidToolInput} }

func queryErrorf(sentinel error, format string, args ...any) error {
	return &queryError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

// kindOf maps the names a caller may use for a search kind to KindRegex or KindBM25:
// the kinds themselves, and the search tools' names and types.
func kindOf(kind string) string {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case KindRegex, RegexToolName, "tool_search_tool_regex_20251119":
		return KindRegex
	case KindBM25, BM25ToolName, "tool_search_tool_bm25_20251119", string(SearchClient), ClientToolName:
		return KindBM25
	}
	return ""
}

// CheckQuery checks a search before it is sent, as the Messages API would: kind is
// KindRegex (a pattern of at most MaxPatternLen characters that compiles under
// toolshed's rules, see search.CompileRegex) or KindBM25 (a query of at most MaxQueryLen
// characters); the search tools' names and types are accepted as kinds too. An empty
// query or pattern is an error as well.
//
// toolshed's regex rules are RE2's, which run in linear time: lookarounds,
// backreferences, atomic groups and possessive quantifiers are errors that name the
// construct. A pattern that passes works on the API and on toolshed's own proxy.
func CheckQuery(kind string, q string) error {
	k := kindOf(kind)
	if k == "" {
		return fmt.Errorf("%w %q; use %q or %q", ErrUnknownKind, kind, KindRegex, KindBM25)
	}
	n := utf8.RuneCountInString(q)
	if k == KindRegex {
		switch {
		case q == "":
			return queryErrorf(ErrEmptyQuery, "the pattern is empty; give a regular expression such as \"github.*issue\"")
		case n > MaxPatternLen:
			return queryErrorf(ErrQueryTooLong, "the pattern is %d characters and the limit is %d; match a shorter distinctive part of the tool's name or description", n, MaxPatternLen)
		}
		if _, err := search.CompileRegex(q); err != nil {
			msg := err.Error()
			var se *search.Error
			if errors.As(err, &se) {
				msg = se.Message
			}
			return queryErrorf(ErrBadPattern, "%s", msg)
		}
		return nil
	}
	switch {
	case strings.TrimSpace(q) == "":
		return queryErrorf(ErrEmptyQuery, "the query is empty; describe the tool you need in a few words, such as \"create github issue\"")
	case n > MaxQueryLen:
		return queryErrorf(ErrQueryTooLong, "the query is %d characters and the limit is %d; keep only the words that describe the tool, or shorten it with Shorten(q, %d)", n, MaxQueryLen, MaxQueryLen)
	}
	return nil
}

// Truncate cuts q to at most max characters, at a word boundary when one is near (see
// search.Truncate). A cut regex pattern may no longer compile: check it again.
func Truncate(q string, max int) string { return search.Truncate(q, max) }

// Shorten fits an over-long BM25 query into max characters before it is sent, rather
// than have it rejected: it drops the words search ignores, then cuts at a word boundary
// (see search.Shorten). It is for BM25 queries; cut a regex pattern with Truncate.
func Shorten(q string, max int) string { return search.Shorten(q, max) }
