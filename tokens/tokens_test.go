package tokens_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/tokens"
)

func TestCount(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{"hello world", 2},
		{"Hello, world!", 4},
		{" ", 1},
	}
	for _, tc := range tests {
		if got := tokens.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
		// A second call comes from the memo and must agree.
		if got := tokens.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) the second time = %d, want %d", tc.text, got, tc.want)
		}
	}
	if tokens.Encoding != "o200k_base" {
		t.Errorf("Encoding = %q", tokens.Encoding)
	}
}

func TestCountGrowsWithText(t *testing.T) {
	one := tokens.Count("create a new issue in a repository")
	if one < 5 {
		t.Fatalf("Count = %d for seven words", one)
	}
	ten := tokens.Count(strings.Repeat("create a new issue in a repository. ", 10))
	if ten < 9*one || ten > 11*(one+1) {
		t.Errorf("ten sentences count %d, one counts %d", ten, one)
	}
}

// TestCountInvalidUTF8 checks that invalid bytes count as the replacement characters a
// client sends in their place.
func TestCountInvalidUTF8(t *testing.T) {
	for _, s := range []string{"\xff", "a\xffb", "caf\xe9 au lait", "\xff\xfe\xfd\xfc abc", "ok \xc3"} {
		replaced := strings.ToValidUTF8(s, "\uFFFD")
		perByte := strings.Map(func(r rune) rune { return r }, s) // one U+FFFD per bad byte
		got := tokens.Count(s)
		if got <= 0 || got != tokens.Count(replaced) && got != tokens.Count(perByte) {
			t.Errorf("Count(%q) = %d; with replacement characters %d or %d", s, got, tokens.Count(replaced), tokens.Count(perByte))
		}
	}
}

func TestCountConcurrent(t *testing.T) {
	texts := make([]string, 50)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = fmt.Sprintf(`{"name":"tool_%d","description":"Does thing number %d","input_schema":{"type":"object"}}`, i, i*i)
	}
	var wg sync.WaitGroup
	got := make([][]int, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range texts {
				j := (i + g*7) % len(texts)
				got[g] = append(got[g], j, tokens.Count(texts[j]))
			}
		}()
	}
	wg.Wait()
	for i, s := range texts {
		want[i] = tokens.Count(s)
	}
	for g := range got {
		for k := 0; k < len(got[g]); k += 2 {
			if j, n := got[g][k], got[g][k+1]; n != want[j] {
				t.Errorf("goroutine %d counted text %d as %d, want %d", g, j, n, want[j])
			}
		}
	}
}

func ExampleCount() {
	fmt.Println(tokens.Count("hello world"))
	// Output: 2
}

// TestMemoBounded counts more distinct texts than the memo keeps, as a proxy that
// counts every request does: the memo never holds more than its bound, and counts stay
// right across its emptying.
func TestMemoBounded(t *testing.T) {
	want := tokens.Count("the memo empties when full")
	for i := range tokens.MaxMemo + 1000 {
		tokens.Count("request " + strconv.Itoa(i))
		if i%4096 == 0 {
			if n := tokens.MemoLen(); n > tokens.MaxMemo {
				t.Fatalf("after %d distinct texts the memo holds %d counts, over its bound of %d", i+1, n, tokens.MaxMemo)
			}
		}
	}
	if n := tokens.MemoLen(); n > tokens.MaxMemo {
		t.Fatalf("the memo holds %d counts, over its bound of %d", n, tokens.MaxMemo)
	}
	if got := tokens.Count("the memo empties when full"); got != want {
		t.Errorf("count after the memo emptied = %d, want %d", got, want)
	}
}
