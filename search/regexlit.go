package search

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// litInfo is what a regular expression tells of the text its matches contain, in
// case-folded bytes (see appendFolded): either the few strings it matches exactly, or
// conditions every match meets.
type litInfo struct {
	// exact, when not nil, lists every string the expression matches.
	exact []string
	// need holds, when exact is nil, lists of strings every match has one of.
	need [][]string
}

// maxExact bounds the strings an exact set may hold: past it, a set is turned into
// a condition (any one of its strings).
const maxExact = 16

// required returns the conditions every match meets: for each list, the match has one
// of its strings.
func (in litInfo) required() [][]string {
	if in.exact != nil {
		return appendNeed(nil, in.exact)
	}
	return in.need
}

// appendNeed adds the condition "one of alts" to need, unless an empty string makes
// it always true.
func appendNeed(need [][]string, alts []string) [][]string {
	if slices.Contains(alts, "") {
		return need
	}
	return append(need, alts)
}

// literals analyzes a simplified expression parsed with the case folding of (?i). It
// follows Code Search's analysis in a smaller form: exact sets grow through
// concatenation and alternation while they stay small; any other operator keeps only
// what every match must contain.
func literals(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litInfo{exact: []string{""}}
	case syntax.OpLiteral:
		// A rune that cannot be folded cuts the literal into runs that can, each of
		// which every match still contains ("café": "caf").
		var b []byte
		var need [][]string
		cut := false
		for _, r := range re.Rune {
			var ok bool
			if b, ok = appendFolded(b, r); !ok {
				need, b, cut = appendNeed(need, []string{string(b)}), b[:0], true
			}
		}
		if !cut {
			return litInfo{exact: []string{string(b)}}
		}
		return litInfo{need: appendNeed(need, []string{string(b)})}
	case syntax.OpCharClass:
		return litInfo{exact: classStrings(re.Rune)}
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpPlus:
		return litInfo{need: literals(re.Sub[0]).required()}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return litInfo{need: literals(re.Sub[0]).required()}
		}
	case syntax.OpConcat:
		cur := []string{""} // the exact strings of the run of exact subexpressions
		var need [][]string
		for _, sub := range re.Sub {
			in := literals(sub)
			if in.exact != nil {
				if len(cur)*len(in.exact) <= maxExact {
					cur = cross(cur, in.exact)
				} else {
					need, cur = appendNeed(need, cur), in.exact
				}
				continue
			}
			need, cur = append(appendNeed(need, cur), in.need...), []string{""}
		}
		if len(need) == 0 {
			return litInfo{exact: cur}
		}
		return litInfo{need: appendNeed(need, cur)}
	case syntax.OpAlternate:
		var union []string
		var either []string // one condition of each alternative, while all have one
		exact, eitherOK := true, true
		for _, sub := range re.Sub {
			in := literals(sub)
			if in.exact != nil {
				for _, s := range in.exact {
					if !slices.Contains(union, s) {
						union = append(union, s)
					}
				}
			} else {
				exact = false
			}
			if need := in.required(); len(need) > 0 {
				either = append(either, longest(need)...)
			} else {
				eitherOK = false
			}
		}
		if exact && len(union) <= maxExact {
			return litInfo{exact: union}
		}
		if eitherOK {
			return litInfo{need: [][]string{either}}
		}
	}
	return litInfo{} // nothing known: star, quest, any character, large classes
}

// longest returns the condition of need whose shortest string is longest: the one
// likely to select the fewest tools.
func longest(need [][]string) []string {
	best, bestLen := need[0], -1
	for _, alts := range need {
		if short := shortest(alts); short > bestLen {
			best, bestLen = alts, short
		}
	}
	return best
}

// shortest returns the length of the shortest of strs.
func shortest(strs []string) int {
	n := len(strs[0])
	for _, s := range strs[1:] {
		n = min(n, len(s))
	}
	return n
}

// maxNeed bounds the conditions a search checks each field for: every one is checked
// for each field, and a few long ones rule out as much as many.
const maxNeed = 8

// selective returns need without repeated conditions, and at most maxNeed of them,
// those whose shortest strings are longest, in their order in need: "e.e.e.e" needs
// "e" once.
func selective(need [][]string) [][]string {
	var out [][]string
	for _, alts := range need {
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, alts) }) {
			out = append(out, alts)
		}
	}
	if len(out) <= maxNeed {
		return out
	}
	keep := slices.Clone(out)
	slices.SortStableFunc(keep, func(a, b []string) int { return shortest(b) - shortest(a) })
	keep = keep[:maxNeed]
	return slices.DeleteFunc(out, func(alts []string) bool {
		return !slices.ContainsFunc(keep, func(k []string) bool { return slices.Equal(k, alts) })
	})
}

// cross returns every string of a followed by a string of b.
func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if s := x + y; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// maxClass bounds the characters a class may have to count as an exact set: ten, for
// digits.
const maxClass = 10

// classStrings returns the characters of a class, folded, as one-character strings, or
// nil when it has more than maxClass of them or one that appendFolded cannot fold.
func classStrings(ranges []rune) []string {
	var out []string
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1]-ranges[i] >= 4*maxClass {
			return nil
		}
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			b, ok := appendFolded(nil, r)
			if !ok {
				return nil
			}
			if s := string(b); !slices.Contains(out, s) {
				if len(out) == maxClass {
					return nil
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// appendFolded appends r as foldASCII writes it, if that form is the same for every
// rune case-insensitive matching takes r for: ASCII letters lowercase, KELVIN SIGN and
// LONG S as k and s, and non-ASCII runes without other cases as they are. A rune with
// other cases outside ASCII (é, É) cannot be folded so, and ok is false.
func appendFolded(b []byte, r rune) ([]byte, bool) {
	switch {
	case r < utf8.RuneSelf:
		return append(b, lowerByte[r]), true
	case r == '\u212a':
		return append(b, 'k'), true
	case r == '\u017f':
		return append(b, 's'), true
	case unicode.SimpleFold(r) == r && r != utf8.RuneError:
		return utf8.AppendRune(b, r), true
	}
	return b, false // and U+FFFD, which matches any invalid byte of the text
}
