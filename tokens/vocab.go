package tokens

import (
	_ "embed"
	"encoding/binary"
	"hash/maphash"
	"strings"
	"sync"
)

// o200kFile holds o200k_base's mergeable tokens in rank order, each as a uvarint length
// and its bytes (a rank the vocabulary does not use has length 0). It is generated from
// the tokenizer library toolshed used before (go test ./tokens -run TestVocabFile
// -update), and TestVocabFile checks every rank against that library.
//
//go:embed o200k_base.bin
var o200kFile string

// vocab is o200k_base as a rank lookup: a token's bytes are data[off[r]:off[r+1]], found
// by an open-addressing table of ranks. It keeps the vocabulary in about 3 MB beside the
// embedded file, where a map of 200,000 strings costs several times that and its build.
type vocab struct {
	data  string
	off   []uint32
	slots []uint32 // rank+1, 0 for an empty slot; len is a power of two
	seed  maphash.Seed
}

var (
	vocabOnce sync.Once
	o200k     *vocab
)

func loadVocab() *vocab {
	vocabOnce.Do(func() { o200k = parseVocab(o200kFile) })
	return o200k
}

// parseVocab reads the embedded file. The file is compiled in, so a malformed one is a
// build defect that TestVocabFile catches; parsing stops at the first bad length rather
// than reading past the end.
func parseVocab(file string) *vocab {
	v := &vocab{seed: maphash.MakeSeed(), off: make([]uint32, 1, 200_001)}
	var data strings.Builder // one allocation, kept as v.data without a copy
	data.Grow(len(file))
	for rest := []byte(file); len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			break
		}
		data.Write(rest[k : k+int(n)])
		v.off = append(v.off, uint32(data.Len()))
		rest = rest[k+int(n):]
	}
	v.data = data.String()
	size := 1
	for size < 2*len(v.off) {
		size <<= 1
	}
	v.slots = make([]uint32, size)
	mask := uint64(size - 1)
	for r := 0; r+1 < len(v.off); r++ {
		tok := v.token(r)
		if tok == "" {
			continue
		}
		for i := maphash.String(v.seed, tok) & mask; ; i = (i + 1) & mask {
			if v.slots[i] == 0 {
				v.slots[i] = uint32(r) + 1
				break
			}
		}
	}
	return v
}

func (v *vocab) token(r int) string { return v.data[v.off[r]:v.off[r+1]] }

// rank returns the rank of the token s, or noRank when s is not a token.
func (v *vocab) rank(s string) uint32 {
	mask := uint64(len(v.slots) - 1)
	for i := maphash.String(v.seed, s) & mask; ; i = (i + 1) & mask {
		r := v.slots[i]
		if r == 0 {
			return noRank
		}
		if v.token(int(r-1)) == s {
			return r - 1
		}
	}
}
