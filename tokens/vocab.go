package tokens

import (
	_ "embed"
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// o200kFile is o200k_base's vocabulary in the very layout the rank lookup reads (see
// vocab), generated from the tokenizer library toolshed used before (go test ./tokens
// -run TestVocabFile -update); TestVocabFile checks every rank against that library. A
// string embedded by go:embed lies in the binary's read-only data, not in the heap, so
// the vocabulary costs the collector nothing and no start builds it.
//
//go:embed o200k_base.bin
var o200kFile string

// vocabMagic starts the file and names its layout; a change of layout changes it.
const vocabMagic = "o200kbp2"

// vocabHeader is the length of the file's header: the magic, then four little-endian
// uint32s: the number of ranks, log2 of the number of slots, the longest token's length
// and the length of the token bytes.
const vocabHeader = len(vocabMagic) + 4*4

// errVocab marks a vocabulary file that does not hold the layout vocab reads.
var errVocab = errors.New("malformed vocabulary file")

// vocab is o200k_base as a rank lookup, read in place from the two sections of the
// embedded file that follow its header:
//
//   - slots: 1<<slotBits little-endian uint64s, an open-addressing table (linear
//     probing) of every token: 0 for an empty slot, else, from the lowest bits up, the
//     token's rank+1, where its bytes start in data, its length, and in the bits left the
//     same bits of its hash (a fingerprint: with the length, it skips the slots of other
//     tokens without reading their bytes). A token's probe starts at the slot its hash's
//     low slotBits bits name;
//   - data: the token bytes, in rank order.
//
// The hash is fixed (vocabHash) so that the table can be built once, at development
// time, and compiled in. A fixed hash is safe here because the table is static: nobody
// can insert into it, so no input can lengthen its probe sequences; a lookup of any text
// reads at most the longest run of occupied slots plus one, which TestVocabFile bounds.
type vocab struct {
	slots, data string
	mask        int // 1<<slotBits - 1
	rankBits    uint
	startBits   uint
	lenShift    uint   // rankBits + startBits
	lenBits     uint   // enough for maxLen
	keyMask     uint64 // the length's and fingerprint's bits: all but the rank's and start's
	maxLen      int
}

var (
	vocabOnce sync.Once
	o200k     vocab
)

// loadVocab returns the embedded vocabulary. Should its file not hold the layout (a
// build defect TestVocabFile catches), the vocabulary is empty: every text then counts
// one token a byte, an overestimate, rather than toolshed failing.
func loadVocab() *vocab {
	vocabOnce.Do(func() { o200k, _ = parseVocab(o200kFile) })
	return &o200k
}

// parseVocab checks that file holds the layout vocab reads, with every slot's rank and
// bytes in range and at least one slot empty, so that no lookup can index past a
// section or probe for ever; it copies nothing.
func parseVocab(file string) (vocab, error) {
	if len(file) < vocabHeader || file[:len(vocabMagic)] != vocabMagic {
		return vocab{}, fmt.Errorf("%w: no %q header", errVocab, vocabMagic)
	}
	ranks, slotBits, maxLen, dataLen := le32(file, 8), le32(file, 12), le32(file, 16), le32(file, 20)
	if slotBits < 1 || slotBits > 28 || ranks >= 1<<slotBits {
		return vocab{}, fmt.Errorf("%w: %d ranks in %d slots", errVocab, ranks, uint64(1)<<min(slotBits, 63))
	}
	v := vocab{
		mask:      1<<slotBits - 1,
		rankBits:  uint(bits.Len32(ranks)),
		startBits: uint(bits.Len32(dataLen)),
		maxLen:    int(maxLen),
	}
	v.lenShift, v.lenBits = v.rankBits+v.startBits, uint(bits.Len32(maxLen))
	if fp := 64 - int(v.lenShift+v.lenBits); fp < 8 {
		return vocab{}, fmt.Errorf("%w: %d ranks, %d bytes of tokens and tokens of up to %d bytes leave %d bits of a slot for its fingerprint, want 8", errVocab, ranks, dataLen, maxLen, fp)
	}
	v.keyMask = ^uint64(0) << v.lenShift
	slotsLen := 8 << slotBits
	if want := vocabHeader + slotsLen + int(dataLen); len(file) != want {
		return vocab{}, fmt.Errorf("%w: %d bytes, want %d", errVocab, len(file), want)
	}
	v.slots, v.data = file[vocabHeader:vocabHeader+slotsLen], file[vocabHeader+slotsLen:]
	empty := 0
	for i := 0; i <= v.mask; i++ {
		e := le64(v.slots, 8*i)
		if e == 0 {
			empty++
			continue
		}
		r, start, n := v.unpack(e)
		switch {
		case r == 0:
			return vocab{}, fmt.Errorf("%w: slot %d holds no rank", errVocab, i)
		case r > ranks:
			return vocab{}, fmt.Errorf("%w: slot %d holds rank %d, want 0 to %d", errVocab, i, r-1, ranks-1)
		case n == 0 || n > int(maxLen):
			return vocab{}, fmt.Errorf("%w: slot %d holds a token of %d bytes, want 1 to %d", errVocab, i, n, maxLen)
		case start+n > int(dataLen):
			return vocab{}, fmt.Errorf("%w: slot %d holds a token ending at byte %d, past the data (%d)", errVocab, i, start+n, dataLen)
		}
	}
	if empty == 0 {
		return vocab{}, fmt.Errorf("%w: no empty slot", errVocab)
	}
	return v, nil
}

// unpack reads a slot: the token's rank+1, and where its bytes start and how many.
func (v *vocab) unpack(e uint64) (rank1 uint32, start, n int) {
	return uint32(e & (1<<v.rankBits - 1)), int(e >> v.rankBits & (1<<v.startBits - 1)), int(e >> v.lenShift & (1<<v.lenBits - 1))
}

// le32 reads the little-endian uint32 at s[i:i+4]: binary.LittleEndian.Uint32 for a
// string (encoding/binary reads only byte slices, and converting would copy); the
// compiler makes it one load.
func le32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// le64 reads the little-endian uint64 at s[i:i+8], as le32 does.
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// vocabHash is the fixed hash of the table, written for short strings (o200k_base's
// tokens average 7 bytes): s is read eight bytes at a time, each word xored into the
// state and mixed by MurmurHash3's fmix64 finalizer (a bijection on 64 bits, so every
// bit of a word reaches every bit of the state). The last one to eight bytes make one
// word: two overlapping four-byte reads (as wyhash does), or for fewer than four bytes
// the first, middle and last. The state starts from len(s), so that strings of
// different lengths differ.
func vocabHash(s string) uint64 {
	h := uint64(len(s)) * 0x9e3779b97f4a7c15
	for ; len(s) > 8; s = s[8:] {
		h = fmix64(h ^ le64(s, 0))
	}
	var w uint64
	switch n := len(s); {
	case n >= 4:
		w = uint64(le32(s, 0)) | uint64(le32(s, n-4))<<32
	case n > 0:
		w = uint64(s[0]) | uint64(s[n/2])<<8 | uint64(s[n-1])<<16
	}
	return fmix64(h ^ w)
}

// fmix64 is MurmurHash3's finalizer.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// rank returns the rank of the token s, or noRank when s is not a token.
func (v *vocab) rank(s string) uint32 {
	if len(s) == 0 || len(s) > v.maxLen {
		return noRank
	}
	h := vocabHash(s)
	key := h&(v.keyMask<<v.lenBits) | uint64(len(s))<<v.lenShift
	for i := int(h) & v.mask; ; i = (i + 1) & v.mask {
		e := le64(v.slots, 8*i)
		if e == 0 {
			return noRank
		}
		if e&v.keyMask == key {
			if r, start, _ := v.unpack(e); v.data[start:start+len(s)] == s {
				return r - 1
			}
		}
	}
}
