package search

import (
	"strings"
	"testing"
)

// osaDistance is the optimal string alignment distance written plainly, with the whole
// table and no bound: the definition editDistance must agree with.
func osaDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			sub := 1
			if a[i-1] == b[j-1] {
				sub = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+sub)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		most int
		want int
	}{
		{"", "", 1, 0},
		{"github", "github", 1, 0},
		{"githb", "github", 1, 1},   // insertion
		{"githubb", "github", 1, 1}, // deletion
		{"gothub", "github", 1, 1},  // substitution
		{"gihtub", "github", 1, 1},  // adjacent swap
		{"ca", "abc", 3, 3},         // optimal string alignment: no edit of a swapped pair
		{"gxxthub", "github", 1, 2}, // too far: most+1
		{"gxxthub", "github", 2, 2}, // within two
		{"abcdef", "ab", 2, 3},      // the lengths alone rule it out
		{"x", "y", 0, 1},            // most 0: equal or not
		{"repository", "repositor", 2, 1},
		{strings.Repeat("a", 70), strings.Repeat("a", 70) + "b", 1, 1},  // one edit: no limit on length
		{strings.Repeat("a", 70), strings.Repeat("a", 68) + "bb", 2, 3}, // two: the table's limit
	} {
		if got := editDistance(c.a, c.b, c.most); got != c.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", c.a, c.b, c.most, got, c.want)
		}
	}
}

// FuzzEditDistance checks the bounded, early-stopping editDistance against the plain
// table for arbitrary strings and bounds.
func FuzzEditDistance(f *testing.F) {
	f.Add("githb", "github", uint8(1))
	f.Add("ca", "abc", uint8(2))
	f.Add("abcdef", "badcfe", uint8(3))
	f.Fuzz(func(t *testing.T, a, b string, most uint8) {
		m := int(most % 4)
		if len(a) > 80 || len(b) > 80 {
			return
		}
		want := min(osaDistance(a, b), m+1)
		if m >= 2 && a != b && len(b) >= 64 {
			want = m + 1 // the table's limit
		}
		if got := editDistance(a, b, m); got != want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", a, b, m, got, want)
		}
	})
}
