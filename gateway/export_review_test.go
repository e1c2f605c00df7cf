package gateway

// RelatedStreams counts the entries of relatedStreams, the process-wide map of the
// Streamable HTTP requests in flight (for the tests that check none is left behind).
func RelatedStreams() int {
	n := 0
	relatedStreams.Range(func(any, any) bool { n++; return true })
	return n
}
