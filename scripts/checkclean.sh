#!/usr/bin/env bash
# Runs a command (a test suite) and checks that it left nothing behind outside the clone:
# no new entry in /tmp, /var/tmp, /dev/shm or the home directory (two levels down), no
# new System V IPC object, and no process it started still running. The caches of the
# Go and npm commands (go env GOCACHE GOMODCACHE GOTELEMETRYDIR, npm config get cache)
# are what they are for and do not count. CI (.ci/run) runs the suites through it.
#
#   bash scripts/checkclean.sh bash scripts/test.sh
#   bash scripts/checkclean.sh bash scripts/test.sh --e2e
#   bash scripts/checkclean.sh --interrupt "$PWD/.tmp/.*/toolshed serve --http" \
#       bash scripts/test.sh ./cmd/toolshed -run TestServeInspectorHTTP
#
# It exits with the command's status, or 1 when that is 0 and something was left. With
# --interrupt REGEX it sends the command SIGINT (as Ctrl-C does) once a process whose
# command line matches REGEX runs, and exits 0 when the interrupted command left
# nothing, 1 otherwise.
#
# A process counts as the command's when it started after the check did and is an
# orphan (its parent died and it was adopted by init) or still a descendant of this
# script: on a machine where other people start processes meanwhile, theirs have
# parents of their own and do not count (an orphan of theirs would).
set -uo pipefail

interrupt=
if [ "${1:-}" = --interrupt ] && [ $# -ge 2 ]; then
	interrupt=$2
	shift 2
fi
if [ $# -eq 0 ]; then
	echo "usage: bash scripts/checkclean.sh [--interrupt REGEX] COMMAND [ARG...]" >&2
	exit 2
fi

places=(/tmp /var/tmp /dev/shm)
allowed=()
for d in $(go env GOCACHE GOMODCACHE GOTELEMETRYDIR 2>/dev/null) $(npm config get cache 2>/dev/null); do
	[ -n "$d" ] && allowed+=("$d")
done

# files lists the entries of the places and of $HOME two levels down, but for the
# caches and the directories that lead to them.
files() {
	local p
	for p in "${places[@]}"; do
		[ -d "$p" ] && find "$p" -mindepth 1 -maxdepth 1 2>/dev/null
	done
	find "$HOME" -mindepth 1 -maxdepth 2 2>/dev/null | while read -r p; do
		local a skip=no
		for a in "${allowed[@]}"; do
			case "$a/" in "$p"/*) skip=yes ;; esac # p is the cache or leads to it
			case "$p/" in "$a"/*) skip=yes ;; esac # p is in the cache
		done
		[ $skip = no ] && echo "$p"
	done
}

ipc() { ipcs -m -s -q 2>/dev/null | awk '$2 ~ /^[0-9]+$/ { print $1, $2, $3 }'; }

# procs prints "pid ppid start" of every process; start is in clock ticks since boot.
procs() {
	local f s
	for f in /proc/[0-9]*/stat; do
		read -r s 2>/dev/null <"$f" || continue
		# The command name, field 2, is in parentheses and may hold spaces: cut after it.
		set -- ${s##*) }
		echo "${s%% *} $2 ${20}"
	done
}

before_files=$(files | sort)
before_ipc=$(ipc | sort)
before_procs=$(procs | awk '{ print $1, $3 }' | sort)

if [ -z "$interrupt" ]; then
	"$@"
	rc=$?
else
	# A command run in the background of a script ignores SIGINT unless told otherwise.
	env --default-signal=INT "$@" &
	pid=$!
	# matching prints the descendants of the command whose command line matches.
	matching() {
		local p q
		for p in $(pgrep -f -- "$interrupt"); do
			q=$p
			while [ "$q" -gt 1 ] && [ "$q" != $pid ]; do
				q=$(awk '{ sub(/.*\) /, ""); print $2 }' /proc/$q/stat 2>/dev/null) || break
				[ -n "$q" ] || break
			done
			[ "$q" = $pid ] && echo $p
		done
	}
	until [ -n "$(matching)" ]; do
		if ! kill -0 $pid 2>/dev/null; then
			echo "checkclean: the command ended before a process matching $interrupt ran" >&2
			wait $pid
			exit 1
		fi
		sleep 0.1
	done
	echo "checkclean: $(ps -o args= -p "$(matching | head -1)" | cut -c1-200) runs: interrupting the command (SIGINT)"
	kill -INT $pid
	wait $pid
	rc=$?
	echo "checkclean: the interrupted command exited $rc"
	rc=0
fi

# What the command started and left: processes that did not exist before, whose
# ancestry reaches init without passing a process that existed before (an orphan),
# or passes this script.
left_procs() {
	procs | awk -v self=$$ -v before="$before_procs" '
		BEGIN { n = split(before, b, "\n"); for (i = 1; i <= n; i++) old[b[i]] = 1 }
		{ parent[$1] = $2; key[$1] = $1 " " $3 }
		END {
			for (p in parent) {
				if (key[p] in old || p == self) continue
				q = parent[p]; ours = 0
				while (1) {
					if (q == self) { ours = 1; break }
					if (q <= 1 || !(q in parent)) { ours = 1; break }
					if (key[q] in old) break
					q = parent[q]
				}
				if (ours) print p
			}
		}'
}

left=no
# Let what is stopping finish: a process has 10 seconds to be gone.
for _ in $(seq 40); do
	[ -z "$(left_procs)" ] && break
	sleep 0.25
done
pids=$(left_procs)
if [ -n "$pids" ] && running=$(ps -o pid=,ppid=,args= -p "$(echo $pids | tr ' ' ,)"); then
	left=yes
	echo "checkclean: processes left running:" >&2
	echo "$running" >&2
fi
new_files=$(comm -13 <(echo "$before_files") <(files | sort))
if [ -n "$new_files" ]; then
	left=yes
	echo "checkclean: files left outside the clone:" >&2
	echo "$new_files" >&2
fi
new_ipc=$(comm -13 <(echo "$before_ipc") <(ipc | sort))
if [ -n "$new_ipc" ]; then
	left=yes
	echo "checkclean: System V IPC objects left (key id owner):" >&2
	echo "$new_ipc" >&2
fi
if [ $left = no ]; then
	echo "checkclean: nothing left outside the clone"
elif [ $rc = 0 ]; then
	rc=1
fi
exit $rc
