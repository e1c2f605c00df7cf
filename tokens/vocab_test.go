package tokens

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strings"
	"testing"
)

// vocabSlotBits sizes the table TestVocabFile writes: 1<<18 slots (2 MiB) for
// o200k_base's 199,998 tokens, 76% full. A lookup reads 2.6 adjacent slots on average
// for a token and 9.5 for a text that is none, mostly within one cache line; 1<<19
// slots would read fewer but cost 2 MiB more of the binary, and of RSS once touched.
const vocabSlotBits = 18

// maxRun bounds the longest run of occupied slots in the table TestVocabFile writes
// (178 with vocabSlotBits 18): no lookup reads more than one slot past it, whatever
// the text.
const maxRun = 192

// buildVocab lays out tokens (in rank order, "" for a rank not used) as vocab reads
// them, with a table of 1<<slotBits slots.
func buildVocab(tokens []string, slotBits uint) []byte {
	maxLen, dataLen := 0, 0
	for _, tok := range tokens {
		maxLen = max(maxLen, len(tok))
		dataLen += len(tok)
	}
	file := []byte(vocabMagic)
	for _, n := range []int{len(tokens), int(slotBits), maxLen, dataLen} {
		file = binary.LittleEndian.AppendUint32(file, uint32(n))
	}
	rankBits, startBits := bits.Len(uint(len(tokens))), bits.Len(uint(dataLen))
	fpShift := rankBits + startBits + bits.Len(uint(maxLen))
	slots := make([]uint64, 1<<slotBits)
	start := 0
	for r, tok := range tokens {
		if tok == "" {
			continue
		}
		h := vocabHash(tok)
		e := uint64(r+1) | uint64(start)<<rankBits | uint64(len(tok))<<(rankBits+startBits) | h>>fpShift<<fpShift
		for i := h & (1<<slotBits - 1); ; i = (i + 1) & (1<<slotBits - 1) {
			if slots[i] == 0 {
				slots[i] = e
				break
			}
		}
		start += len(tok)
	}
	for _, e := range slots {
		file = binary.LittleEndian.AppendUint64(file, e)
	}
	for _, tok := range tokens {
		file = append(file, tok...)
	}
	return file
}

// longestRun returns the longest run of occupied slots of v's table, wrapping around
// its end: a lookup of any text reads at most one more slot than that.
func (v *vocab) longestRun() int {
	n := len(v.slots) / 8
	longest, run := 0, 0
	for i := 0; i < 2*n; i++ {
		if le64(v.slots, 8*(i%n)) == 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, min(run, n))
	}
	return longest
}

// TestVocabLoadAllocates checks that loading the vocabulary allocates nothing: its
// table of ranks and its token bytes are read where they lie in the embedded file,
// which the binary keeps in read-only data, so the collector neither holds them nor
// lets the heap grow to twice their size.
func TestVocabLoadAllocates(t *testing.T) {
	if allocs := testing.AllocsPerRun(5, func() { parseVocab(o200kFile) }); allocs != 0 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		parseVocab(o200kFile)
		runtime.ReadMemStats(&after)
		t.Errorf("loading the vocabulary made %.0f allocations of %d bytes, want none", allocs, after.TotalAlloc-before.TotalAlloc)
	}
}

// TestVocabMalformed checks that a file without the layout vocab reads is refused
// with a reason, so that no lookup indexes past a section or probes for ever, and that
// the empty vocabulary left in its place finds no token.
func TestVocabMalformed(t *testing.T) {
	tokens := []string{"a", "b", "", "ab", "abc"}
	good := buildVocab(tokens, 3) // rank+1 in 3 bits, start in 3, length in 2: 8 slots
	v, err := parseVocab(string(good))
	if err != nil {
		t.Fatalf("a well-formed file: %v", err)
	}
	for r, tok := range tokens {
		if want := uint32(r); tok == "" && v.rank(tok) != noRank || tok != "" && v.rank(tok) != want {
			t.Fatalf("a well-formed file: rank(%q) = %d, want %d", tok, v.rank(tok), want)
		}
	}
	for _, s := range []string{"ba", "aa", "abcd", "c"} {
		if r := v.rank(s); r != noRank {
			t.Fatalf("a well-formed file: rank(%q) = %d, want none", s, r)
		}
	}
	patch := func(edit func(f []byte)) string {
		f := bytes.Clone(good)
		edit(f)
		return string(f)
	}
	// header sets the header's fields from field on: 0 ranks, 1 log2 slots, 2 longest
	// token, 3 data length.
	header := func(field int, n uint32, more ...uint32) string {
		return patch(func(f []byte) {
			for _, n := range append([]uint32{n}, more...) {
				binary.LittleEndian.PutUint32(f[len(vocabMagic)+4*field:], n)
				field++
			}
		})
	}
	slots := func(e uint64, at ...int) string {
		return patch(func(f []byte) {
			for _, i := range at {
				binary.LittleEndian.PutUint64(f[vocabHeader+8*i:], e)
			}
		})
	}
	tests := []struct {
		name, file, why string
	}{
		{"empty", "", `no "o200kbp2" header`},
		{"another magic", "o200kbp1" + string(good[8:]), `no "o200kbp2" header`},
		{"truncated", string(good[:len(good)-1]), fmt.Sprintf("%d bytes, want %d", len(good)-1, len(good))},
		{"longer", string(good) + "x", fmt.Sprintf("%d bytes, want %d", len(good)+1, len(good))},
		{"more ranks than slots", header(0, 8), "8 ranks in 8 slots"},
		{"no slots", header(1, 0), "5 ranks in 1 slots"},
		{"a huge table", header(1, 40), "5 ranks in 1099511627776 slots"},
		{"no room for a fingerprint", header(2, math.MaxUint32, math.MaxUint32), "leave -3 bits"},
		{"an entry without a rank", slots(1<<3, 0), "slot 0 holds no rank"},
		{"a rank past the last", slots(6|1<<6, 1), "slot 1 holds rank 5, want 0 to 4"},
		{"an empty token", slots(1, 2), "slot 2 holds a token of 0 bytes, want 1 to 3"},
		{"a token past the longest", header(2, 2), "a token of 3 bytes, want 1 to 2"},
		{"a token past the data", slots(1|7<<3|1<<6, 7), "slot 7 holds a token ending at byte 8, past the data (7)"},
		{"no empty slot", slots(1|1<<6, 0, 1, 2, 3, 4, 5, 6, 7), "no empty slot"},
	}
	for _, tc := range tests {
		v, err := parseVocab(tc.file)
		if !errors.Is(err, errVocab) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: error %v, want %v saying %q", tc.name, err, errVocab, tc.why)
		}
		if r := v.rank("a"); r != noRank {
			t.Errorf("%s: the vocabulary left finds rank(a) = %d", tc.name, r)
		}
	}
}

// BenchmarkLoadVocab measures what the first count of every launch pays to load the
// vocabulary.
func BenchmarkLoadVocab(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		parseVocab(o200kFile)
	}
}
