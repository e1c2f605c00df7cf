// Package release holds the tests of how toolshed is shipped: the Dockerfile (its build
// line makes a static binary, and the image it describes starts and serves), the release
// config (.goreleaser.yaml, read strictly, and the six targets it names cross-compile).
// It has no code of its own: what it tests are files at the repository's root.
package release
