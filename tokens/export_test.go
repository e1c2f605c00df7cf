package tokens

// MaxMemo is maxMemo, the most counts the memo keeps.
const MaxMemo = maxMemo

// MemoLen counts the counts the memo holds now.
func MemoLen() int {
	n := 0
	memo.Range(func(any, any) bool { n++; return true })
	return n
}
