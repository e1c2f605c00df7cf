package bridge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// oversizedNumbers returns where v, arguments decoded with json.Number, holds a number
// beyond the bounds above, as "at /pointer: 1e1000001", sorted; nil when none does.
func oversizedNumbers(v any) []string {
	var at []string
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, where+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
			}
		case []any:
			for i, e := range v {
				walk(e, where+"/"+strconv.Itoa(i))
			}
		case json.Number:
			if oversized(string(v)) {
				shown := string(v)
				if len(shown) > 40 {
					shown = shown[:40] + "…"
				}
				at = append(at, fmt.Sprintf("at %s: %s", where, shown))
			}
		}
	}
	walk(v, "")
	sort.Strings(at)
	return at
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
