// Package release holds the tests of how toolshed is shipped: the release config
// (.goreleaser.yaml, read strictly, and the packages of the six targets it names
// resolve), in the quick suite; and, behind the build tag e2e (bash scripts/test.sh
// --e2e), the builds: the Dockerfile's build line makes a static binary that serves,
// the image it describes starts and serves, and (with TOOLSHED_CROSS set) the six
// targets cross-compile. It has no code of its own: what it tests are files at the
// repository's root.
package release
