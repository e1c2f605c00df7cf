package search

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
)

func TestGramText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  ,.;  ", ""},
		{"weather", " weather "},
		{"web_search", " web search "},
		{"getWeather", " get weather "},
		{"HTTPServer", " http server "},
		{"ipv4-address", " ipv 4 address "},
		{"github.create-issue", " github create issue "},
		// Stop words go, whatever their case; words that only start like one stay.
		{"Get the weather for a City", " get weather city "},
		{"A", ""},
		{"the a of", ""},
		{"The theme of Andes", " theme andes "},
		{"  many   spaces\there\n", " many spaces "},
		// Letters of other scripts, lowercased; a word that goes on past ASCII stays whole.
		{"Café Über naïve", " café über naïve "},
		{"ΑΒΓ", " αβγ "},
		{"获取天气 API", " 获取天气 api "},
		// Bytes that are not UTF-8 separate, as punctuation does.
		{"ab\xffcd", " ab cd "},
	} {
		if got := string(appendGramText(nil, c.in)); got != c.want {
			t.Errorf("appendGramText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Appending continues one text: one space between the parts.
	if got := string(appendGramText(appendGramText(nil, "send_mail"), "to Bob")); got != " send mail bob " {
		t.Errorf("two texts: %q, want %q", got, " send mail bob ")
	}
}

// appendGramSet appends the distinct 4-grams of text to dst, sorted: the definition of
// a text's grams, which the tests hold gramTable to.
func appendGramSet(dst []uint32, text []byte) []uint32 {
	from := len(dst)
	for i := 0; i+4 <= len(text); i++ {
		dst = append(dst, uint32(text[i])<<24|uint32(text[i+1])<<16|uint32(text[i+2])<<8|uint32(text[i+3]))
	}
	slices.Sort(dst[from:])
	return append(dst[:from], slices.Compact(dst[from:])...)
}

// gramOverlap returns how many grams the sorted sets a and b have in common, by a merge:
// the definition gramTable.count is held to.
func gramOverlap(a, b []uint32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

// tableGrams returns the grams gramTable finds in text, sorted.
func tableGrams(text []byte) []uint32 {
	var tab gramTable
	tab.reset(len(text))
	got := tab.appendText(nil, text)
	if tab.n != len(got) {
		panic("gramTable counts other grams than it lists")
	}
	slices.Sort(got)
	return got
}

// gramStrings returns grams as their four bytes.
func gramStrings(grams []uint32) []string {
	out := make([]string, len(grams))
	for i, g := range grams {
		out[i] = string([]byte{byte(g >> 24), byte(g >> 16), byte(g >> 8), byte(g)})
	}
	return out
}

func TestGramSet(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{" a ", nil},
		{" ab ", []string{" ab "}},
		{" web search ", []string{" sea", " web", "arch", "b se", "earc", "eb s", "rch ", "sear", "web "}},
		// Repeats count once.
		{" aaaaaa ", []string{" aaa", "aaa ", "aaaa"}},
		{" go go go ", []string{" go ", "go g", "o go"}},
	} {
		if got := gramStrings(appendGramSet(nil, []byte(c.text))); !slices.Equal(got, c.want) {
			t.Errorf("appendGramSet(%q) = %q, want %q", c.text, got, c.want)
		}
		if got := gramStrings(tableGrams([]byte(c.text))); !slices.Equal(got, c.want) {
			t.Errorf("gramTable of %q: %q, want %q", c.text, got, c.want)
		}
	}
	// A tool's grams are appended after what dst holds, which stays, in text order.
	var tab gramTable
	tab.reset(16)
	dst := tab.appendText([]uint32{7}, []byte(" go go "))
	if got := gramStrings(dst[1:]); dst[0] != 7 || !slices.Equal(got, []string{" go ", "go g", "o go"}) {
		t.Errorf("appended grams: %v %q", dst[0], got)
	}
}

func TestGramOverlap(t *testing.T) {
	set := func(text string) []uint32 { return appendGramSet(nil, []byte(appendGramText(nil, text))) }
	for _, c := range []struct {
		query, tool string
		want        int
	}{
		{"", "anything", 0},
		{"weather", "", 0},
		{"weather", "weather", 6},         // " wea" "weat" "eath" "athe" "ther" "her "
		{"weather", "get weather now", 6}, // all of the query's
		{"wether", "weather", 2},          // " wet"/"weth" miss; "ther", "her " meet... and not " wea"
		{"websearch", "web_search", 5},    // " web", "sear", "earc", "arch", "rch "
		{"xyzzy", "weather", 0},
	} {
		q, tl := set(c.query), set(c.tool)
		if got := gramOverlap(q, tl); got != c.want {
			t.Errorf("gramOverlap(%q, %q) = %d, want %d", c.query, c.tool, got, c.want)
		}
		if got := gramOverlap(tl, q); got != c.want {
			t.Errorf("gramOverlap(%q, %q) = %d, want %d (not symmetric)", c.tool, c.query, got, c.want)
		}
		var tab gramTable
		text := appendGramText(nil, c.query)
		tab.reset(len(text))
		tab.appendText(nil, text)
		if tab.n != len(q) {
			t.Errorf("gramTable of %q has %d grams, want %d", c.query, tab.n, len(q))
		}
		if got := tab.count(tl); got != c.want {
			t.Errorf("gramTable(%q).count(%q) = %d, want %d", c.query, c.tool, got, c.want)
		}
	}
}

// TestGramTableMatchesMerge holds the search's count in a hash table to the definition,
// a merge of two sorted sets, over random texts of a small alphabet (so that they share
// grams) and of every byte.
func TestGramTableMatchesMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for i := range 2000 {
		alphabet := "ab c"
		if i%2 == 1 {
			alphabet = string(all)
		}
		q, tl := text(alphabet, r.IntN(600)), text(alphabet, r.IntN(2000))
		checkGramCount(t, q, tl)
	}
}

func checkGramCount(t *testing.T, query, tool string) {
	t.Helper()
	qt, tt := appendGramText(nil, query), appendGramText(nil, tool)
	qs, ts := appendGramSet(nil, qt), appendGramSet(nil, tt)
	if got := tableGrams(tt); !slices.Equal(got, ts) {
		t.Fatalf("tool %q: the table finds grams %v, the definition %v", tool, got, ts)
	}
	var tab gramTable
	tab.reset(len(qt))
	tab.appendText(nil, qt)
	if tab.n != len(qs) {
		t.Fatalf("query %q: table has %d grams, the set %d", query, tab.n, len(qs))
	}
	if got, want := tab.count(ts), gramOverlap(qs, ts); got != want {
		t.Fatalf("query %q, tool %q: table counts %d, the merge %d", query, tool, got, want)
	}
}

func FuzzGramText(f *testing.F) {
	for _, s := range []string{"", "getWeather", "web_search for the city", "Café Über", "获取天气 API", "a\xffb", "HTTPServer v2.1", strings.Repeat("ab ", 300)} {
		f.Add(s, "weather forecast")
	}
	f.Fuzz(func(t *testing.T, s, other string) {
		text := appendGramText(nil, s)
		if len(text) > 0 {
			if text[0] != ' ' || text[len(text)-1] != ' ' || len(text) < 3 {
				t.Fatalf("%q: gram text %q does not start and end with a space around a word", s, text)
			}
		}
		if strings.Contains(string(text), "  ") || strings.ContainsAny(string(text), "\x00\t\n") {
			t.Fatalf("%q: gram text %q has two spaces, a NUL or other white space", s, text)
		}
		if !utf8.Valid(text) {
			t.Fatalf("%q: gram text %q is not UTF-8", s, text)
		}
		for _, c := range text {
			if c >= 'A' && c <= 'Z' {
				t.Fatalf("%q: gram text %q has an uppercase ASCII letter", s, text)
			}
		}
		for w := range strings.FieldsSeq(string(text)) {
			if stopWords[w] {
				t.Fatalf("%q: gram text %q keeps the stop word %q", s, text, w)
			}
		}
		set := appendGramSet(nil, text)
		for i, g := range set {
			if g == 0 || i > 0 && set[i-1] >= g {
				t.Fatalf("%q: grams not distinct, sorted and nonzero: %v", s, set)
			}
		}
		if want := max(len(text)-3, 0); len(set) > want {
			t.Fatalf("%q: %d grams from %d bytes", s, len(set), len(text))
		}
		// Every gram is four bytes of the text.
		for _, g := range gramStrings(set) {
			if !strings.Contains(string(text), g) {
				t.Fatalf("%q: gram %q is not in %q", s, g, text)
			}
		}
		checkGramCount(t, s, other)
		checkGramCount(t, s, s)
	})
}

// gramSnapshot is a catalog of tools by name and description.
func gramSnapshot(t testing.TB, tools ...[2]string) *catalog.Snapshot {
	t.Helper()
	var raw []map[string]any
	for _, tl := range tools {
		raw = append(raw, map[string]any{"name": tl[0], "description": tl[1], "inputSchema": map[string]any{"type": "object"}})
	}
	doc, err := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "s", "tools": raw}}})
	if err != nil {
		t.Fatal(err)
	}
	return catalogtest.Snapshot(t, string(doc))
}

// TestGramsFindWordParts checks what the 4-grams are for: a tool that shares with the
// query only a misspelt word, or a compound written as one word, ranks higher with them
// than without, where BM25F sees only the words both share exactly. Each query's tools
// match it by one word, in descriptions of as many words, so BM25F ties them and the
// catalog's order ranks the tool meant last but one: the letters decide.
func TestGramsFindWordParts(t *testing.T) {
	snap := wordPartsSnapshot(t)
	on := DefaultParams
	on.Grams = 0.1
	off, with := NewIndex(snap), NewIndexParams(snap, on)
	for _, c := range []struct{ query, tool string }{
		{"wether forcast for my city", "get_weather"},
		{"websearch a topic", "web_search"},
	} {
		rank := func(ix *Index) int {
			rs, err := ix.Search(c.query, Options{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				if r.Tool.Name == c.tool {
					return i + 1
				}
			}
			return 0
		}
		without, got := rank(off), rank(with)
		if without == 0 || got == 0 {
			t.Fatalf("%q: %s not found (rank %d without 4-grams, %d with)", c.query, c.tool, without, got)
		}
		if got != 1 || without == 1 {
			t.Errorf("%q: %s ranks %d without 4-grams and %d with, want below 1 and 1", c.query, c.tool, without, got)
		}
	}
}

// wordPartsSnapshot is TestGramsFindWordParts' catalog.
func wordPartsSnapshot(t testing.TB) *catalog.Snapshot {
	return gramSnapshot(t,
		[2]string{"sights", "Sights and places to visit in a city."},
		[2]string{"eating_out", "Restaurants and cafes to eat at in a city."},
		[2]string{"get_weather", "The weather forecast for the week in a city."},
		[2]string{"books", "Books written recently about a topic."},
		[2]string{"web_search", "Search the web for pages about a topic."},
		[2]string{"trending", "Stories people read today about a topic."},
	)
}

// TestGramsZeroIsToday checks that 4-gram rescoring at weight 0 changes nothing: with
// Params.Grams 0 the index keeps no grams, and an index that has them but weighs them 0
// (so every pruning bound and candidate pass of rescored runs) ranks as topK does,
// same tools, same order, same scores, on every query of the four bench sets.
func TestGramsZeroIsToday(t *testing.T) {
	if testing.Short() {
		t.Skip("four bench sets")
	}
	for _, set := range []string{"livemcpbench", "bfcl", "apibench", "restbench"} {
		qs, snap := BenchSet(t, set)
		today := NewIndex(snap)
		if today.grams != nil {
			t.Fatal("an index with Grams 0 keeps 4-grams")
		}
		on := DefaultParams
		on.Grams = 0.2
		zero := *NewIndexParams(snap, on)
		zero.params.Grams = 0
		for _, q := range qs {
			query := Shorten(q.Query, MaxQueryLen)
			for _, limit := range []int{1, 5, 50} {
				want, err1 := today.Search(query, Options{Limit: limit})
				got, err2 := zero.Search(query, Options{Limit: limit})
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !slices.EqualFunc(got, want, func(a, b Result) bool {
					return a.Tool == b.Tool && a.Score == b.Score && a.Match == b.Match
				}) {
					t.Fatalf("%s %s, limit %d: ranks differently:\n got %v\nwant %v", set, q.ID, limit, got, want)
				}
			}
		}
	}
}

// TestGramsRescoreExact holds rescored, which prunes with a bound and stops early, to
// its definition computed the long way: every tool scored by BM25F, the first GramsTop
// reordered by score × (1 + Grams × share), the rest after them.
func TestGramsRescoreExact(t *testing.T) {
	// bfcl's catalog has posting lists long enough for ranked to prune.
	for _, set := range []string{"livemcpbench", "restbench", "bfcl"} {
		qs, snap := BenchSet(t, set)
		if len(qs) > 400 {
			qs = qs[:400]
		}
		plain := NewIndex(snap)
		for _, lambda := range []float64{0.1, 0.3, 2} {
			for _, top := range []int{0, 3, 20, 50} {
				p := DefaultParams
				p.Grams, p.GramsTop = lambda, top
				ix := NewIndexParams(snap, p)
				for _, q := range qs {
					query := Shorten(q.Query, MaxQueryLen)
					for _, limit := range []int{1, 5, 10} {
						got := ix.ranked(query, shapeOf(query), nil, limit)
						want := rescoreLongWay(ix, plain, query, limit)
						if !slices.EqualFunc(got, want, func(a, b Result) bool { return a.Tool == b.Tool && a.Score == b.Score }) {
							t.Fatalf("%s: λ %v, top %d, limit %d, %q:\n got %v\nwant %v", set, lambda, top, limit, q.ID, got, want)
						}
					}
				}
			}
		}
	}
}

// rescoreLongWay is rescored's definition: all of plain's BM25F ranking, the first
// GramsTop of it rescored with ix's grams, then the first limit.
func rescoreLongWay(ix, plain *Index, query string, limit int) []Result {
	all := plain.ranked(query, shapeOf(query), nil, plain.snap.Len())
	s := ix.scratch()
	defer ix.release(s)
	s.queryGrams(query)
	q := appendGramSet(nil, s.gramText)
	top := min(ix.params.GramsTop, len(all))
	for i := range all[:top] {
		share := float32(0)
		if len(q) > 0 {
			share = float32(gramOverlap(q, slices.Sorted(slices.Values(ix.grams[all[i].Tool.Index])))) / float32(len(q))
		}
		all[i].Score = float64(float32(all[i].Score) * (1 + float32(ix.params.Grams)*share))
	}
	slices.SortStableFunc(all[:top], func(a, b Result) int {
		return -cmpScored(scored{float32(a.Score), int32(a.Tool.Index)}, scored{float32(b.Score), int32(b.Tool.Index)})
	})
	return all[:min(limit, len(all))]
}

// cmpScored orders by weaker: -1 when a is weaker.
func cmpScored(a, b scored) int {
	switch {
	case weaker(a, b):
		return -1
	case weaker(b, a):
		return 1
	}
	return 0
}

// TestGramsWithEvidence checks that the learned field composes with the 4-grams: the
// index with evidence keeps them, and ranks with both.
func TestGramsWithEvidence(t *testing.T) {
	snap := wordPartsSnapshot(t)
	p := DefaultParams
	p.Grams = 0.1
	ix := NewIndexParams(snap, p)
	learned := ix.WithEvidence([]Evidence{{Tool: "s__books", Query: "novels to read", Count: 3, Last: time.Now()}}, time.Now())
	if learned == ix || learned.grams == nil {
		t.Fatal("WithEvidence dropped the 4-grams or learned nothing")
	}
	for _, c := range []struct{ query, first string }{
		{"novels to read", "books"},                   // the learned field
		{"wether forcast for my city", "get_weather"}, // the 4-grams
	} {
		rs, err := learned.Search(c.query, Options{})
		if err != nil || len(rs) == 0 || rs[0].Tool.Name != c.first {
			t.Errorf("%q: %v %v, want %s first", c.query, gramNames(rs), err, c.first)
		}
	}
}

func gramNames(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprint(r.Tool.Name)
	}
	return out
}
