package tokens

import (
	"flag"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"
)

// These tests hold toolshed's tokenizer to the library it replaced: the same vocabulary,
// the same pieces and the same counts.

var update = flag.Bool("update", false, "rewrite o200k_base.bin from the tokenizer library (TestVocabFile)")

// o200kPattern is the library's pre-tokenizer regexp for o200k_base.
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

func library(t testing.TB) tokenizer.Codec {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVocabFile checks the embedded vocabulary against the library's: the file is
// exactly what buildVocab makes of the library's tokens, every token is found at its
// rank, the table's longest run of occupied slots (what a lookup of any text reads at
// most) is bounded, and texts that are not tokens are not found (with -update, writes
// the file from the library).
func TestVocabFile(t *testing.T) {
	lib := library(t).(*codec.Codec)
	var tokens []string
	for r := 0; r < 200_000; r++ {
		tok, err := lib.Decode([]uint{uint(r)})
		if err != nil {
			tok = "" // a rank o200k_base does not use
		}
		tokens = append(tokens, tok)
	}
	file := buildVocab(tokens, vocabSlotBits)
	if *update {
		if err := os.WriteFile("o200k_base.bin", file, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if o200kFile != string(file) {
		t.Fatalf("o200k_base.bin differs from the library's vocabulary; run go test ./tokens -run TestVocabFile -update")
	}
	if _, err := parseVocab(o200kFile); err != nil {
		t.Fatal(err)
	}
	v := loadVocab()
	used := 0
	for r, tok := range tokens {
		if tok == "" {
			continue
		}
		used++
		if got := v.rank(tok); got != uint32(r) {
			t.Fatalf("rank(%q) = %d, want %d", tok, got, r)
		}
	}
	if used < 199_000 {
		t.Errorf("%d ranks used, want about 199,998", used)
	}
	// The table's longest run of occupied slots bounds what a lookup of any text
	// reads: no input can do worse, as nothing is ever inserted.
	if run := v.longestRun(); run > maxRun {
		t.Errorf("the table's longest run of occupied slots is %d, want at most %d", run, maxRun)
	}
	for _, s := range []string{"", "<|endoftext|>", "\xff\xfe", strings.Repeat("z", 300), tokens[1000] + "\x00"} {
		if r := v.rank(s); r != noRank {
			t.Errorf("rank(%q) = %d, want none", s, r)
		}
	}
}

// libraryPieces splits s with the library's regexp, in its engine.
func libraryPieces(t testing.TB, re *regexp2.Regexp, s string) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pieces(s string) []string {
	s = string([]rune(s))
	var out []string
	for i := 0; i < len(s); {
		e, skip := nextPiece(s, i)
		if !skip {
			out = append(out, s[i:e])
		}
		i = e
	}
	return out
}

// splitSeeds are texts that reach each alternative of the regexp and its backtracking:
// contractions in any case, marks and modifier letters between cases, numbers of every
// script, runs of whitespace before and after line breaks, symbols with slashes and
// breaks after them, and invalid UTF-8.
var splitSeeds = []string{
	"", "hello world", "Hello, World!", "don't I'LL we'Re they'VE", "'s 's's", "x'", "'",
	"HTTPServer getHTTPResponse ABCdef aBC", "CamelCaseIsFun", "ǅungla ǈa", "ʰaʰb Aʰ", "中文字符 日本語",
	"e\u0301cole A\u0301B \u0301\u0301x \u0301", "1234567 ١٢٣٤ Ⅻ ½", "a1b2 3c",
	"  leading", "trailing  ", "a  b", "a \n b", "x\r\n\r\n  y", "\n\n\n", " \t\n \t", "\u00a0\u00a0x", "\u2028\u3000a",
	"foo//bar ./\n/x", "!!!\n\n/", " ?? ", "{\"type\":\"object\",\"properties\":{}}", "<|endoftext|>",
	"caf\xe9 au lait", "\r \r", " \n \r\n\n  x", "it'ſ", "IT'ſ x", "a\x7fb", " \x7f\x7f!", "\x7f ", "\xff\xfe", "ok \xc3", "😀👍🏽 emoji", "naïve façade", "Ωmega σίγμα ΣΊΓΜΑ",
}

func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	re := regexp2.MustCompile(o200kPattern, regexp2.None)
	lib := library(f)
	f.Fuzz(func(t *testing.T, s string) {
		want := libraryPieces(t, re, s)
		got := pieces(s)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Fatalf("pieces of %q:\n got %q\nwant %q", s, got, want)
		}
		n, err := lib.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		if c := count(s); c != n {
			t.Fatalf("count(%q) = %d, library %d", s, c, n)
		}
	})
}

// TestCountLongPieces checks the heap merge against the library on pieces past
// scanLimit: long words, long runs of one symbol and long runs of spaces.
func TestCountLongPieces(t *testing.T) {
	lib := library(t)
	for _, s := range []string{
		strings.Repeat("abcdefgh", 40), strings.Repeat("z", 1000), strings.Repeat("=", 500),
		strings.Repeat(" ", 300) + "x", strings.Repeat("é", 200), "Supercalifragilisticexpialidocious" + strings.Repeat("ology", 30),
		strings.Repeat("\U0001F600", 100),
	} {
		want, _ := lib.Count(s)
		if got := count(s); got != want {
			t.Errorf("count of %d bytes %.20q… = %d, library %d", len(s), s, got, want)
		}
	}
	if !utf8.ValidString(strings.Repeat("é", 200)) {
		t.Fatal("test text")
	}
}
