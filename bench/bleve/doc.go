// Package blevebench compares toolshed's search with bleve (github.com/blevesearch/bleve/v2),
// a general-purpose Go full-text engine, on the same catalogs and queries. It is a module
// of its own so bleve never becomes a dependency of toolshed; the benchmarks and the
// sanity test are in blevebench_test.go, and README.md gives the figures and how to run them.
package blevebench
