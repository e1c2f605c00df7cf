// Package tokens counts the tokens a model pays for a piece of text.
//
// Counts come from a real byte-pair-encoding tokenizer (OpenAI's o200k_base, its
// vocabulary compiled into the binary, so nothing is downloaded at run time): its
// pre-tokenizer written out by hand (split.go) and its merges over a compact table
// (vocab.go, bpe.go), tested to count exactly as the tiktoken-go library does. Claude's
// own tokenizer is not public; o200k_base is the closest widely used vocabulary and is
// the figure toolshed reports everywhere, so numbers stay comparable between commands,
// fronts and releases.
package tokens

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Encoding names the vocabulary every count uses.
const Encoding = "o200k_base"

// memo remembers counts by content hash: tool definitions repeat across every catalog
// assembly, and re-encoding them is the most expensive part of a rebuild. It holds at
// most maxMemo counts (memoSize of them now) and is emptied when full: texts that
// never repeat (the proxy counts every request it translates) must not grow it without
// end, and a catalog's definitions are counted again at most once per emptying.
var (
	memo     sync.Map // [32]byte -> int
	memoSize atomic.Int64
)

// maxMemo bounds the counts memo keeps: about 6 MiB, room for every definition of a
// catalog of 50,000 tools.
const maxMemo = 1 << 16

// Count returns the number of o200k_base tokens in s. Invalid UTF-8 is counted as the
// replacement characters a client would send instead, one for each invalid byte.
func Count(s string) int {
	key := sha256.Sum256([]byte(s))
	if n, ok := memo.Load(key); ok {
		return n.(int)
	}
	n := count(s)
	if memoSize.Add(1) > maxMemo {
		memo.Clear()
		memoSize.Store(1)
	}
	memo.Store(key, n)
	return n
}

// CountUncached is Count without the memo, for a caller that keeps each count itself
// (a catalog.Cache counts each definition once for as long as its server lists it):
// the memo would only hold the same counts a second time.
func CountUncached(s string) int { return count(s) }

// count splits s as o200k_base's pre-tokenizer does and adds up the tokens byte-pair
// encoding makes of each piece.
func count(s string) int {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	v := loadVocab()
	n := 0
	for i := 0; i < len(s); {
		e, skip := nextPiece(s, i)
		if !skip {
			n += v.countPiece(s[i:e])
		}
		i = e
	}
	return n
}
