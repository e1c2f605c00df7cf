#!/usr/bin/env bash
# Counts the instructions (and, with --branches, mispredicted branches) one operation of
# a search benchmark executes, under valgrind's cachegrind. Unlike wall time, which moves
# by ±20% on a shared machine, the count repeats to within a few percent, so it can tell
# a 5% change apart. It runs the benchmark twice, for N1 and N2 operations, and divides
# the difference by N2-N1, which cancels the setup (building the scale catalog). The
# garbage collector is off and one P runs, so both runs do the same work.
#
#   bash scripts/cachegrind.sh [--branches] [--pgo] BENCH N1 N2
#   bash scripts/cachegrind.sh 'Search/10000$' 100 600
#   bash scripts/cachegrind.sh --branches 'IndexRebuild/10000$' 2 6
#
# --pgo builds the test binary with cmd/toolshed/default.pgo, as the binary ships.
# Needs valgrind (Debian package valgrind). A count is for the code and the Go version at
# hand; compare two commits by running this on each.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

branches=no
pgo=off
while [[ $# -gt 0 && $1 == --* ]]; do
	case $1 in
	--branches) branches=yes ;;
	--pgo) pgo=$PWD/cmd/toolshed/default.pgo ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [[ $# -ne 3 || ! $2 =~ ^[0-9]+$ || ! $3 =~ ^[0-9]+$ || $3 -le $2 ]]; then
	echo "usage: bash scripts/cachegrind.sh [--branches] [--pgo] BENCH N1 N2   (N2 > N1)" >&2
	exit 2
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -pgo="$pgo" -o "$tmp/search.test" ./search

# count N prints the instructions, then the mispredicted branches if asked, of N operations.
count() {
	(cd search && GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=no \
		--branch-sim=$branches --cachegrind-out-file=/dev/null "$tmp/search.test" \
		-test.run XXX -test.bench "$1" -test.benchtime "$2x" -test.cpu 1 2>&1) |
		awk '/I +refs:/ || /Mispredicts:/ { gsub(",", "", $0); for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; break } }'
}
a=($(count "$1" "$2"))
b=($(count "$1" "$3"))
n=$(($3 - $2))
echo "$1: $(((b[0] - a[0]) / n)) instructions per operation"
if [[ $branches == yes ]]; then
	echo "$1: $(((b[1] - a[1]) / n)) mispredicted branches per operation"
fi
