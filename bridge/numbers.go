package bridge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The full validator reads every number it compares (minimum, multipleOf, an integer
// type, an enum) as a big.Rat, whose cost grows with the number's exponent and length:
// 0.6 µs for 1.5, 2.4 µs for 1e400, 7 µs for 1e1000, 120 µs for 1e10000, 50 ms for
// 1e999999. Past an exponent of about a million math/big gives up, and the validator
// then dereferences the nil it got and panics (which nothing recovers before the
// gateway). A request body of 4 MiB holds 400,000 such numbers: hours of CPU. So the
// arguments' numbers are bounded before the validator reads them, far beyond what a
// float64 holds (1.8e308), which is what servers parse numbers into.
const (
	maxNumberExponent = 400 // |exponent|, as written
	maxNumberLength   = 400 // bytes of the token
)

// maxNumbersShown bounds the huge numbers oversizedNumbers reports, and maxPointerShown
// the bytes of each one's pointer: arguments can hold hundreds of thousands of them,
// under keys of a megabyte nested thousands deep.
const (
	maxNumbersShown = 10
	maxPointerShown = 200
)

// oversizedNumbers returns where v, arguments decoded with json.Number, holds a number
// beyond the bounds above, as "at /pointer: 1e1000001", sorted, at most maxNumbersShown
// of them and then how many more; nil when none does. The pointers are written only
// for the numbers reported: writing every value's, each a copy of its parent's, cost
// the length of a key times the depth below it (a 100 kB key over 5,000 nested arrays
// held 500 MB at once).
func oversizedNumbers(v any) []string {
	var at []string
	more := 0
	var path []string // the escaped reference tokens down to the value walked
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				path = append(path, strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
				walk(e)
				path = path[:len(path)-1]
			}
		case []any:
			for i, e := range v {
				path = append(path, strconv.Itoa(i))
				walk(e)
				path = path[:len(path)-1]
			}
		case json.Number:
			if !oversized(string(v)) {
				return
			}
			if len(at) == maxNumbersShown {
				more++
				return
			}
			where, shown := shorten(strings.Join(path, "/"), maxPointerShown), shorten(string(v), 40)
			if len(path) > 0 {
				where = "/" + where
			}
			at = append(at, fmt.Sprintf("at %s: %s", where, shown))
		}
	}
	walk(v)
	sort.Strings(at)
	if more > 0 {
		at = append(at, fmt.Sprintf("and %d more", more))
	}
	return at
}

// shorten cuts s to its first n bytes or fewer, at a character's start, marked with an
// ellipsis.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// oversized reports whether the JSON number n is longer, or its exponent larger, than
// the bounds allow.
func oversized(n string) bool {
	if len(n) > maxNumberLength {
		return true
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || exp > maxNumberExponent || exp < -maxNumberExponent
}
