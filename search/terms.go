package search

// Words calls fn with each word the analyzer finds in text, lowercased, and the index
// term it becomes ("" for a stop word), in order. It is how a query or a tool's text
// is seen by search, for tools outside the index that must agree with it: toolshed
// stats, which suggests as keywords the words of missed queries that a tool's own text
// lacks, must not suggest "creating" for a tool whose description says "creates".
func Words(text string, fn func(word, term string)) {
	tokenize(text, nil, func(tok []byte, h uint64) {
		fn(string(tok), stemOf(tok, h).text)
	})
}
