package percent

import (
	"math"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		part, whole int
		want        float64
		text        string
	}{
		{0, 10, 0, "0.0%"},
		{10, 10, 100, "100.0%"},
		{1, 3, 33.3, "33.3%"},
		{2, 3, 66.7, "66.7%"},
		{1, 8, 12.5, "12.5%"},
		// The built-in catalog: 128,878 tokens without tool search, 264 with it.
		{128878 - 264, 128878, 99.8, "99.8%"},
		// Nearly all is not all, nearly none is not none.
		{9999, 10000, 99.9, "99.9%"},
		{199999, 200000, 99.9, "99.9%"},
		{1, 10000, 0.1, "0.1%"},
		{1, 200000, 0.1, "0.1%"},
		{-1, 200000, -0.1, "-0.1%"},
		{-9999, 10000, -99.9, "-99.9%"},
		{-10, 10, -100, "-100.0%"},
		{15, 10, 150, "150.0%"},
		{10001, 10000, 100.1, "100.1%"},
		// A share of nothing is nothing.
		{0, 0, 0, "0.0%"},
		{5, 0, 0, "0.0%"},
		{5, -1, 0, "0.0%"},
	} {
		got := Of(tc.part, tc.whole)
		if got != tc.want {
			t.Errorf("Of(%d, %d) = %v, want %v", tc.part, tc.whole, got, tc.want)
		}
		if text := OfText(tc.part, tc.whole); text != tc.text {
			t.Errorf("OfText(%d, %d) = %q, want %q", tc.part, tc.whole, text, tc.text)
		}
	}
}

func TestRound(t *testing.T) {
	for _, tc := range []struct {
		in, want float64
		text     string
	}{
		{0, 0, "0.0%"},
		{math.Copysign(0, -1), 0, "0.0%"},
		{-0.04, -0.1, "-0.1%"},
		{0.04, 0.1, "0.1%"},
		{0.05, 0.1, "0.1%"},
		{12.34, 12.3, "12.3%"},
		{12.35, 12.4, "12.4%"},
		{99.94, 99.9, "99.9%"},
		{99.95, 99.9, "99.9%"},
		{99.9999, 99.9, "99.9%"},
		{100, 100, "100.0%"},
		{100.04, 100.1, "100.1%"},
		{-99.97, -99.9, "-99.9%"},
		{-100.02, -100.1, "-100.1%"},
		{math.NaN(), 0, "0.0%"},
		{math.Inf(1), 0, "0.0%"},
	} {
		if got := Round(tc.in); got != tc.want {
			t.Errorf("Round(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%v) = %q, want %q", tc.in, got, tc.text)
		}
		// Rounding a rounded figure changes nothing, so Text may be given either.
		if r := Round(tc.in); Round(r) != r {
			t.Errorf("Round(Round(%v)) = %v, not %v", tc.in, Round(r), r)
		}
	}
}
