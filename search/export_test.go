package search

// ResetStemCache empties the process-wide stem cache, so that a benchmark measures a
// cold build.
var ResetStemCache = resetStemCache
