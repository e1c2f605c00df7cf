// Package percent is how toolshed rounds and writes a percentage, in every report: the
// tokens command, serve's summary line, stats, lint and eval. One rule, so that two
// commands never give the same figure two ways (99.8% in one, 100% in the other).
package percent

import (
	"math"
	"strconv"
)

// Of returns part as a percentage of whole, rounded by Round; 0 when whole is 0 or
// less (a share of nothing).
func Of(part, whole int) float64 {
	if whole <= 0 {
		return 0
	}
	return Round(100 * float64(part) / float64(whole))
}

// Round rounds the percentage p to one decimal place, but never to 0 or 100 (or -100)
// unless p is exactly that: a report that says 100% of the tokens were saved, or 0% of
// the calls failed, must mean all or none. So 99.96 is 99.9, 0.04 is 0.1 and -0.04 is
// -0.1; a NaN or an infinity is 0.
func Round(p float64) float64 {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return 0
	}
	r := math.Round(p*10) / 10
	for _, exact := range []float64{0, 100, -100} {
		if r == exact && p != exact {
			return exact + math.Copysign(0.1, p-exact)
		}
	}
	if r == 0 {
		return 0 // no "-0.0%"
	}
	return r
}

// Text writes the percentage p as Round rounds it, with one decimal and a percent
// sign: "99.8%".
func Text(p float64) string { return strconv.FormatFloat(Round(p), 'f', 1, 64) + "%" }

// OfText is Text(Of(part, whole)).
func OfText(part, whole int) string { return Text(Of(part, whole)) }
