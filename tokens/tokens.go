// Package tokens counts the tokens a model pays for a piece of text.
//
// Counts come from a real byte-pair-encoding tokenizer (OpenAI's o200k_base, compiled into
// the binary, so nothing is downloaded at run time). Claude's own tokenizer is not public;
// o200k_base is the closest widely used vocabulary and is the figure toolshed reports
// everywhere, so numbers stay comparable between commands, fronts and releases.
package tokens

import (
	"crypto/sha256"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names the vocabulary every count uses.
const Encoding = "o200k_base"

var (
	codecOnce sync.Once
	codec     tokenizer.Codec

	// memo remembers counts by content hash: tool definitions repeat across every
	// catalog assembly, and re-encoding them is the most expensive part of a rebuild.
	memo sync.Map // [32]byte -> int
)

func load() tokenizer.Codec {
	codecOnce.Do(func() {
		c, err := tokenizer.Get(tokenizer.O200kBase)
		if err != nil {
			// The vocabulary is compiled in; failing to load it is a build defect, not input.
			panic("tokens: o200k_base vocabulary missing: " + err.Error())
		}
		codec = c
	})
	return codec
}

// Count returns the number of o200k_base tokens in s. Invalid UTF-8 is counted as the
// replacement characters a client would send instead.
func Count(s string) int {
	key := sha256.Sum256([]byte(s))
	if n, ok := memo.Load(key); ok {
		return n.(int)
	}
	n, err := load().Count(s)
	if err != nil {
		// Count only fails on invalid UTF-8 in strict mode; fall back to a byte estimate
		// rather than reporting zero cost.
		n = (len(s) + 3) / 4
	}
	memo.Store(key, n)
	return n
}
