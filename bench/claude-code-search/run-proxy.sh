#!/usr/bin/env bash
# Claude Code's ToolSearch through toolshed proxy, against toolshed's own search on the same queries.
# usage: run-proxy.sh SETDIR [TOOLSHED_BINARY] [-- proxy flags]   e.g. run-proxy.sh bench/restbench ./toolshed
# Claude Code -> toolshed proxy (--catalog SETDIR/catalog.json by default) -> the scripted model.
# With proxy flags "--client-search off", it measures Claude Code's own search through the proxy.
# Needs $CLAUDE_BIN as run.sh does. Scratch goes to ${CCS_WORK:-/tmp/ccs}.
set -u
H=$(cd "$(dirname "$0")" && pwd)
W=${CCS_WORK:-/tmp/ccs}; mkdir -p "$W"
SET=$(cd "$1" && pwd); NAME=$(basename "$SET"); shift
TS=$W/toolshed
if [ $# -gt 0 ] && [ "$1" != "--" ]; then TS=$1; shift; fi
[ "${1:-}" = "--" ] && shift
PROXY_ARGS=("$@")
[ ${#PROXY_ARGS[@]} -eq 0 ] && PROXY_ARGS=(--catalog "$SET/catalog.json")
TAG=proxy; [[ " ${PROXY_ARGS[*]} " == *" --client-search off "* ]] && TAG=proxy-off
[ -x "${CLAUDE_BIN:-}" ] || { echo "set CLAUDE_BIN to the Claude Code 2.1.332 binary"; exit 1; }
fake=$((18420 + RANDOM % 50)); proxy=$((fake + 100))
"$TS" proxy --listen 127.0.0.1:$proxy --upstream-url http://127.0.0.1:$fake --db off "${PROXY_ARGS[@]}" 2> "$W/$NAME-$TAG.proxy.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$proxy/healthz" && break; sleep 0.1; done
CCS_PROXY_PORT=$proxy python3 "$H/run_set.py" --set "$SET" --name "$NAME-$TAG" --max-results 5 --port $fake --workdir "$W" --claude "$CLAUDE_BIN" --fix-schemas </dev/null
python3 "$H/score.py" "$W/runs/$NAME-$TAG" --toolshed "$TS" --catalog "$SET/catalog.json" --json "$W/runs/$NAME-$TAG-score.json" </dev/null
