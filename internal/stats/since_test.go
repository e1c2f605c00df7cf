package stats

import (
	"errors"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string // a part of the error, "" for none
	}{
		{"7d", 7 * 24 * time.Hour, ""},
		{"1d", 24 * time.Hour, ""},
		{"30d", 30 * 24 * time.Hour, ""},
		{" 7d ", 7 * 24 * time.Hour, ""},
		{"36h", 36 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"36500d", 36500 * 24 * time.Hour, ""},
		{"", 0, "give days (7d)"},
		{"7", 0, "give days (7d)"},
		{"7x", 0, "give days (7d)"},
		{"d", 0, "whole days"},
		{"1.5d", 0, "whole days"},
		{"7 d", 0, "whole days"},
		{"-3d", 0, "longer than zero"},
		{"0d", 0, "longer than zero"},
		{"-1h", 0, "longer than zero"},
		{"0s", 0, "longer than zero"},
		{"36501d", 0, "up to 36500d"},
		{"99999999999999999999d", 0, "whole days"},
		{"1w", 0, "give days (7d)"},
	}
	for _, tc := range tests {
		got, err := ParseSince(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !errors.Is(err, ErrSince) || !contains(err.Error(), tc.err)):
			t.Errorf("ParseSince(%q) = %v, %v; want an ErrSince saying %q", tc.in, got, err, tc.err)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"7d", "36h", "-1d", "1h30m", "d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseSince(s)
		if err == nil && d <= 0 {
			t.Errorf("ParseSince(%q) = %v without an error", s, d)
		}
	})
}
