#!/usr/bin/env bash
# Regenerates cmd/toolshed/default.pgo, the CPU profile that Go's profile-guided
# optimization uses when it builds the toolshed binary (go build picks default.pgo up in
# the main package's directory). The profile is of the search package's benchmarks:
# index builds and searches at 1,000 and 10,000 tools, the code where toolshed spends
# its CPU. Regenerate it after changing that code; commit the result.
#
#   bash scripts/pgo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/search.test" ./search
(cd search && "$tmp/search.test" -test.run XXX -test.bench 'Index' -test.benchtime 40x -test.cpuprofile "$tmp/build.prof" >/dev/null)
(cd search && "$tmp/search.test" -test.run XXX -test.bench 'Search' -test.benchtime 20000x -test.cpuprofile "$tmp/search.prof" >/dev/null)
(cd search && "$tmp/search.test" -test.run XXX -test.bench 'Regex' -test.benchtime 200x -test.cpuprofile "$tmp/regex.prof" >/dev/null)
go tool pprof -proto "$tmp/build.prof" "$tmp/search.prof" "$tmp/regex.prof" >cmd/toolshed/default.pgo
echo "wrote cmd/toolshed/default.pgo ($(wc -c <cmd/toolshed/default.pgo) bytes)"
