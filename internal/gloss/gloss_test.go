package gloss

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		text, want string
	}{
		{"", ""},
		{"no Chinese here", ""},
		{"天气", "weather "},
		// The longest word wins: 游戏 is one word, not 游 and 戏.
		{"游戏", "game "},
		{"获取天气", "gain get acquire weather "},
		// A word said again is glossed once.
		{"天气，天气", "weather "},
		// Other text between words adds nothing and does not join them.
		{"查询 the 天气!", "check weather "},
		// Traditional forms have their own lines.
		{"新聞", "news "},
		// A character the table lacks is skipped, and the next one read.
		{"\u9fa5天气", "weather "},
		// Characters of the lead bytes of the table's range but below it.
		{"䷀天气㐀", "weather "},
		// Invalid UTF-8 and characters outside the table's range add nothing, and
		// split words: 天 and 气 apart are "day" and "gas air".
		{"\xff天\xe5\x8f气😀", "day gas air "},
	} {
		if got := string(Append(nil, tc.text)); got != tc.want {
			t.Errorf("Append(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestAppendKeepsDst checks that Append appends rather than overwrites.
func TestAppendKeepsDst(t *testing.T) {
	if got := string(Append([]byte("x "), "新闻")); got != "x news " {
		t.Errorf("got %q", got)
	}
}

// entries returns the table's lines as headword and gloss pairs.
func entries(t testing.TB) (heads, glosses []string) {
	t.Helper()
	if !strings.HasSuffix(table, "\n") {
		t.Fatal("table does not end in a newline")
	}
	for _, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		h, g, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("line %q has no tab", l)
		}
		heads, glosses = append(heads, h), append(glosses, g)
	}
	return heads, glosses
}

// hashOf hashes a whole word as Append hashes its prefixes.
func hashOf(word string) uint32 {
	h := uint32(hashStart)
	for _, c := range word {
		h = hashStep(h, c)
	}
	return h
}

// TestTable checks the embedded table and its index, which Append relies on: every line
// a headword of one to four characters of the indexed range, a tab and a gloss of
// printable ASCII; the lines sorted by headword, with no headword twice; every headword
// found through the index, which holds nothing else, each slot marked with its word's
// hash; the lengths of the headwords starting with each character recorded; and the
// filter passing the first two characters of every longer headword while it stays
// sparse. gen.go writes both files; run it if this fails.
func TestTable(t *testing.T) {
	heads, glosses := entries(t)
	if len(heads) < 30000 {
		t.Fatalf("table has %d lines, expected over 30,000", len(heads))
	}
	lengthsOf := map[rune]byte{}
	for i, head := range heads {
		if k := utf8.RuneCountInString(head); k < 1 || k > 4 || len(head) > maxWord {
			t.Fatalf("line %d: headword %q", i, head)
		}
		for _, c := range head {
			if c < first || c > last {
				t.Fatalf("line %d: headword %q has %U", i, head, c)
			}
		}
		if g := glosses[i]; g == "" || strings.ContainsFunc(g, func(r rune) bool { return r < ' ' || r > '~' }) {
			t.Fatalf("line %d: gloss %q", i, g)
		}
		if i > 0 && head <= heads[i-1] {
			t.Fatalf("line %d: %q after %q", i, head, heads[i-1])
		}
		if at, ok := lookup(head, hashOf(head)); !ok || string(appendGloss(nil, at, len(head))) != glosses[i]+" " {
			t.Fatalf("lookup(%q) = %d, %v; want the line of %q", head, at, ok, glosses[i])
		}
		c, size := utf8.DecodeRuneInString(head)
		k := utf8.RuneCountInString(head)
		lengthsOf[c] |= 1 << (k - 1)
		if k >= 3 && !mayGoOn(hashOf(head[:size+3])) {
			t.Fatalf("the filter rules out %q", head)
		}
	}
	if slots&(slots-1) != 0 || len(idx) != int(4+4*slots+last-first+1+pairBits/8) {
		t.Fatalf("index of %d bytes for %d slots", len(idx), slots)
	}
	used := 0
	for j := range slots {
		v := u32(4 + 4*j)
		if v == 0 {
			continue
		}
		used++
		at := v&(1<<offsetBits-1) - 1
		head := table[at:][:strings.IndexByte(table[at:], '\t')]
		if (v^hashOf(head))>>offsetBits != 0 {
			t.Fatalf("slot %d of %q is marked %x", j, head, v>>offsetBits)
		}
	}
	if used != len(heads) {
		t.Errorf("index has %d slots in use for %d headwords", used, len(heads))
	}
	for c := rune(first); c <= last; c++ {
		if lengths(c) != lengthsOf[c] {
			t.Fatalf("lengths(%q) = %04b, want %04b", c, lengths(c), lengthsOf[c])
		}
	}
	set := 0
	for p := range uint32(pairBits) {
		if mayGoOn(p) {
			set++
		}
	}
	if set > pairBits/20 {
		t.Errorf("the filter passes %d of %d pairs", set, pairBits)
	}
	if _, ok := lookup("猫狗鸡鸭", hashOf("猫狗鸡鸭")); ok {
		t.Error("lookup found a word that is not in the table")
	}
}

// TestAppendMatchesDefinition holds Append to a plain longest-match over a map of the
// table, each word glossed once, on texts made of the table's own headwords: runs of
// them, with words said twice, stray characters and spaces between.
func TestAppendMatchesDefinition(t *testing.T) {
	heads, glosses := entries(t)
	words := map[string]string{}
	for i, h := range heads {
		words[h] = glosses[i]
	}
	texts := 0
	for from := 0; from < len(heads); from += 7 * 20 {
		var text strings.Builder
		for i := from; i < min(from+7*20, len(heads)); i += 7 {
			text.WriteString(heads[i])
			if i%5 == 0 { // and the first character of another headword
				h := heads[(i*31)%len(heads)]
				_, size := utf8.DecodeRuneInString(h)
				text.WriteString(h[:size])
			}
			if i%11 == 0 {
				text.WriteString(" ")
			}
		}
		text.WriteString(heads[from]) // a word again
		s := text.String()
		var want []byte
		seen := map[string]bool{}
		for i := 0; i < len(s); {
			c, size := utf8.DecodeRuneInString(s[i:])
			best := size
			if c >= first && c <= last {
				for n := min(len(s)-i, maxWord); n > 0; n-- {
					if g, ok := words[s[i:i+n]]; ok {
						if !seen[s[i:i+n]] {
							want = append(append(want, g...), ' ')
							seen[s[i:i+n]] = true
						}
						best = n
						break
					}
				}
			}
			i += best
		}
		if got := Append(nil, s); string(got) != string(want) {
			t.Fatalf("Append(%q) = %q, want %q", s, got, want)
		}
		texts++
	}
	if texts < 200 {
		t.Errorf("only %d texts", texts)
	}
}

// FuzzAppend checks that Append never panics and appends only whole glosses of the table.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"获取微博热搜榜", "游戏 game", "\xe6\xb8", "新聞天气"} {
		f.Add(s)
	}
	_, all := entries(f)
	glosses := map[string]bool{}
	for _, g := range all {
		glosses[g] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(Append(nil, s))
		if out != "" && !strings.HasSuffix(out, " ") {
			t.Fatalf("Append(%q) = %q: no final space", s, out)
		}
		// Glosses hold spaces themselves, so check the output splits into glosses.
		if !splitsInto(out, glosses) {
			t.Fatalf("Append(%q) = %q: not a sequence of glosses", s, out)
		}
	})
}

// splitsInto reports whether s is a concatenation of members of set, each followed by
// a space.
func splitsInto(s string, set map[string]bool) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && set[s[:i]] && splitsInto(s[i+1:], set) {
			return true
		}
	}
	return false
}
