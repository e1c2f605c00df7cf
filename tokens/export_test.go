package tokens

// CountUncached is count, for benchmarks that must not hit the memo.
var CountUncached = count
