#!/usr/bin/env bash
# The test command: installs the real MCP components the tests use (scripts/deps.sh,
# quick when already done), then runs go test.
#
#   bash scripts/test.sh                 # go test ./...
#   bash scripts/test.sh -run Gateway -v # go test ./... -run Gateway -v
#   bash scripts/test.sh ./gateway -v    # go test ./gateway -v (packages first)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh --e2e # go test ./... runs internal/e2e, which drives the agent clients

if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
	set -- ./... "$@"
fi
echo "== go test $*"
exec go test "$@"
