#!/usr/bin/env bash
# The test commands. Each installs what its tests need (scripts/deps.sh, quick when that
# is done already), then runs go test through gotestsum, which ends with the failed and
# the skipped tests, each with its output (a skip says what is missing and how to
# install it), and this script with the slowest tests.
#
#   bash scripts/test.sh          # the quick suite: go test ./..., the packages' tests
#                                 # against the real MCP servers (server-everything,
#                                 # -memory, -filesystem, the Inspector, the conformance
#                                 # suite)
#   bash scripts/test.sh --e2e    # the end-to-end suite: the tests behind the build tag
#                                 # e2e (internal/e2e: Claude Code, Codex CLI, Gemini CLI,
#                                 # the TypeScript SDK and AI SDK, Chromium, nginx,
#                                 # PostgreSQL; internal/release: the binary and image
#                                 # builds)
#   bash scripts/test.sh ./gateway -run TestX -v    # packages, then go test flags
#   bash scripts/test.sh --e2e -run TestCodexServe  # flags alone: the suite's packages
#
# Each suite has its own -timeout (QUICK_TIMEOUT, E2E_TIMEOUT below: well above what it
# takes on a loaded 2-core machine); a -timeout given here comes after it and wins.
# Set GOTESTSUM_JSONFILE=FILE to keep go test's JSON events (per-test durations).
#
# Nothing is left outside the clone, even when a test fails or times out or the run is
# interrupted: TMPDIR and GOTMPDIR point into .tmp/ (emptied at the start, removed at
# the end); go test runs in a session of its own, and whatever is left of that session
# (or carries this run's TOOLSHED_TEST_RUN in its environment) at the end is stopped.
# Processes left by a run that finished fail it: a test should have stopped them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

QUICK_TIMEOUT=30m
E2E_TIMEOUT=60m

suite=quick
if [ "${1:-}" = --e2e ]; then
	suite=e2e
	shift
fi

# others_can_enter DIR reports whether users other than this one can reach DIR: every
# directory from / down to it is executable by others.
others_can_enter() {
	local d=$1
	while :; do
		(( 8#$(stat -c %a "$d") & 1 )) || return 1
		[ "$d" = / ] && return 0
		d=$(dirname "$d")
	done
}

# TMPDIR is .tmp/ in the clone, unless that cannot serve, where it is a directory in
# /tmp, removed all the same: as root the tests run PostgreSQL as postgres and nginx as
# nobody, in directories under TMPDIR, which they cannot reach in a clone closed to
# other users (under root's home); and Chromium makes a unix socket 56 characters below
# TMPDIR, whose path may not pass 107 characters.
tmp=$root/.tmp
why=
if [ ${#tmp} -gt 50 ]; then
	why="its path is too long for the unix sockets that Chromium makes in TMPDIR"
elif [ "$(id -u)" = 0 ] && ! others_can_enter "$root"; then
	why="it is closed to other users, so PostgreSQL and nginx could not reach .tmp/ there"
fi
if [ -n "$why" ]; then
	tmp=$(mktemp -d /tmp/toolshed-test.XXXXXX)
	chmod 755 "$tmp"
	echo "test.sh: the clone at $root will not do for the tests' temporary files ($why): they go to $tmp, removed at the end"
else
	rm -rf "$tmp"
	mkdir -p "$tmp"
fi
export TMPDIR=$tmp GOTMPDIR=$tmp
jsonfile=${GOTESTSUM_JSONFILE:-$tmp/test.json}
run=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
sid=
finished=no
leaked=no

# run_pids prints the live processes of this run: those of go test's session, and those
# that carry the run's marker (a daemon that left the session).
run_pids() {
	{
		ps -eo pid=,sid=,stat= | awk -v sid="$sid" '$2 == sid && $3 !~ /^Z/ { print $1 }'
		grep -lsz "^TOOLSHED_TEST_RUN=$run\$" /proc/[0-9]*/environ | cut -d/ -f3
	} | sort -un | grep -vx "$$" || true
}

# stop_run stops what is left of the run: SIGTERM, then SIGKILL to what is still there
# 10 seconds later. After a run that finished, what its tests started has 30 seconds
# to end on its own (a server whose stdin closed, a toolshed that a test binary's death
# told to stop, and that drains first); what is left then fails the run.
stop_run() {
	[ -n "$sid" ] || return 0
	local pids i left
	if [ $finished = yes ]; then
		for i in $(seq 240); do
			[ -n "$(run_pids)" ] || return 0
			sleep 0.125
		done
		pids=$(run_pids)
		left=$(ps -o pid=,args= -p "$(echo $pids | tr ' ' ,)") || return 0
		leaked=yes
		echo "test.sh: FAIL: the tests left these processes running (a test must stop what it starts):" >&2
		echo "$left" >&2
	else
		pids=$(run_pids)
		[ -n "$pids" ] || return 0
		echo "test.sh: stopping the $(echo $pids | wc -w) processes the interrupted run left" >&2
	fi
	kill -TERM $pids 2>/dev/null || true
	for i in $(seq 120); do
		[ -n "$(run_pids)" ] || return 0
		[ "$i" = 80 ] && kill -KILL $(run_pids) 2>/dev/null || true
		sleep 0.125
	done
	echo "test.sh: these processes would not die:" >&2
	ps -o pid=,args= -p "$(run_pids | paste -sd,)" >&2 || true
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_run
	rm -rf "$tmp"
	if [ $leaked = yes ] && [ $rc = 0 ]; then
		rc=1
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ $suite = e2e ]; then
	bash scripts/deps.sh --e2e
else
	bash scripts/deps.sh
fi

# The e2e suite's packages are those with test files behind the build tag e2e.
e2e_packages() {
	local f='{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}'
	comm -13 <(go list -f "$f" ./... | sort) <(go list -tags e2e -f "$f" ./... | sort) | cut -d' ' -f1
}

flags=(-timeout "$QUICK_TIMEOUT")
if [ $suite = e2e ]; then
	flags=(-tags e2e -timeout "$E2E_TIMEOUT")
fi
if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
	if [ $suite = e2e ]; then
		mapfile -t pkgs < <(e2e_packages)
		[ ${#pkgs[@]} -gt 0 ] || { echo "test.sh: no package has tests behind the build tag e2e" >&2; exit 1; }
		set -- "${pkgs[@]}" "$@"
	else
		set -- ./... "$@"
	fi
fi

echo "== go test ${flags[*]} $*"
start=$SECONDS
rc=0
# setsid: go test and everything it starts get a session of their own (its id is the
# pid of setsid, which execs gotestsum), which is how stop_run finds them.
TOOLSHED_TEST_RUN=$run setsid "$root/.deps/bin/gotestsum" --format pkgname-and-test-fails --format-hide-empty-pkg \
	--jsonfile "$jsonfile" -- "${flags[@]}" "$@" &
sid=$!
wait $sid || rc=$?
finished=yes
echo "== $suite suite: $((SECONDS - start))s of wall time; the slowest tests (30s or more):"
"$root/.deps/bin/gotestsum" tool slowest --jsonfile "$jsonfile" --threshold 30s | head -n 15 || true
exit $rc
