//go:build race

package search_test

// raceEnabled reports a build with the race detector, which makes regexp matching many
// times slower: tests that check results against a slow reference check fewer cases.
const raceEnabled = true
