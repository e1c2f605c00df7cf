#!/usr/bin/env bash
# Installs the real components that toolshed's tests run against, into .deps/
# (git-ignored). Idempotent, and quick when everything is already in place.
#
#   bash scripts/deps.sh         # what the quick suite (bash scripts/test.sh) needs
#   bash scripts/deps.sh --e2e   # and the agent clients of the end-to-end suite
#
#   .deps/npm/      npm ci of scripts/npm/servers: the reference MCP servers
#                   (@modelcontextprotocol/server-everything, -memory, -filesystem), the
#                   TypeScript SDK v2 (@modelcontextprotocol/server and client, MCP
#                   2026-07-28) that internal/testupstream/ts2's test servers run on, the
#                   MCP Inspector CLI, the MCP conformance suite, and a Node 22 binary
#                   (the npm package "node") for the tools that need Node >= 22.
#   .deps/auth/     npm ci of scripts/npm/auth: the OAuth components of the sign-in tests
#                   (internal/testoidc): oidc-provider as the authorization server, and the
#                   MCP TypeScript SDK v1 with express and jose for the protected MCP servers.
#   .deps/clients/  with --e2e only, npm ci of scripts/npm/clients: Claude Code, Codex
#                   CLI, Gemini CLI, the MCP TypeScript SDK and the AI SDK, which the
#                   end-to-end tests (internal/e2e) drive.
#   .deps/bin/everything-server, .deps/bin/everything-client
#                   the go-sdk's conformance everything-server and everything-client
#                   (the client drives toolshed in cmd/toolshed's client-role conformance
#                   test), built with go install from the go-sdk version that go.mod
#                   requires (GO_SDK_FALLBACK if none).
#   .deps/bin/gotestsum
#                   gotestsum, which scripts/test.sh runs go test through, built with go
#                   install at GOTESTSUM_VERSION (not a tool of go.mod, whose
#                   requirements it would raise for toolshed's own build).
#
# Needs: go, node (>= 20) and npm on PATH, and the npm registry and the Go module
# proxy. Nothing here is fetched at run time of toolshed itself; internal/testupstream
# only looks in .deps/ and tells the test what to run when something is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS="$ROOT/.deps"
BIN_DIR="$DEPS/bin"
GO_SDK=github.com/modelcontextprotocol/go-sdk
GO_SDK_FALLBACK=v1.8.0 # used only while go.mod does not require the go-sdk
GOTESTSUM=gotest.tools/gotestsum
GOTESTSUM_VERSION=v1.13.0

say() { printf 'deps: %s\n' "$*"; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

e2e=no
for arg in "$@"; do
	case $arg in
	--e2e) e2e=yes ;;
	*) die "unknown argument $arg (usage: bash scripts/deps.sh [--e2e])" ;;
	esac
done

for tool in go node npm; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is not on PATH (on Debian: apt-get install -y nodejs npm; Go from go.dev)"
done

# --- npm packages ---------------------------------------------------------------
# npm_install SRC DIR installs scripts/npm/SRC into DIR with npm ci, unless DIR's stamp
# says it holds that install already. The stamp is the SHA-256 of package.json
# followed by package-lock.json; internal/testupstream computes the same hash to spot
# a stale install.
npm_install() {
	local src="$ROOT/scripts/npm/$1" dir=$2 hash start
	hash=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
	if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$hash" ]; then
		say "npm packages of scripts/npm/$1 up to date in ${dir#"$ROOT"/} (lockfile ${hash:0:12})"
		return
	fi
	say "installing scripts/npm/$1 into ${dir#"$ROOT"/} with npm ci (node $(node --version), npm $(npm --version))"
	start=$SECONDS
	rm -rf "$dir"
	mkdir -p "$dir"
	# npm ci through a symlinked .deps (a worktree sharing another's) takes the
	# project root for a link and refuses the lockfile ("Missing: npm@0.0.0").
	dir=$(cd -P "$dir" && pwd)
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	# --loglevel=error hides the EBADENGINE warnings: the Inspector and the conformance
	# suite declare Node >= 22 and are run with the Node 22 installed here.
	npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
	if [ "$1" = servers ]; then
		local node22="$dir/node_modules/node/bin/node" v
		[ -x "$node22" ] || die "npm ci did not install the Node 22 binary at $node22"
		v=$("$node22" --version)
		case "$v" in v22.*) ;; *) die "$node22 is $v, expected v22.x" ;; esac
		say "Node 22 is $v"
	fi
	echo "$hash" >"$dir/.stamp"
	say "installed scripts/npm/$1 in $((SECONDS - start))s ($(du -sh "$dir" | cut -f1))"
}

npm_install servers "$DEPS/npm"
npm_install auth "$DEPS/auth"
if [ $e2e = yes ]; then
	npm_install clients "$DEPS/clients"
fi

# --- Go programs -------------------------------------------------------------------
# go_install NAME PKG VERSION builds PKG@VERSION into .deps/bin/NAME unless its stamp
# says it is there. go install pkg@version builds in module mode outside this module:
# it never touches go.mod/go.sum, and the installed module's own go.sum pins its
# dependencies.
go_install() {
	local name=$1 pkg=$2 version=$3 stamp="$BIN_DIR/$1.stamp" start
	local want="$pkg@$version"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$BIN_DIR/$name" ]; then
		say "$name up to date in .deps/bin ($want)"
		return
	fi
	start=$SECONDS
	mkdir -p "$BIN_DIR"
	rm -f "$stamp"
	say "building $name from $want"
	GOBIN="$BIN_DIR" go install "$want"
	echo "$want" >"$stamp"
	say "built .deps/bin/$name in $((SECONDS - start))s"
}

sdk_version=$(cd "$ROOT" && go list -m -f '{{.Version}}' "$GO_SDK" 2>/dev/null || true)
go_install everything-server "$GO_SDK/conformance/everything-server" "${sdk_version:-$GO_SDK_FALLBACK}"
go_install everything-client "$GO_SDK/conformance/everything-client" "${sdk_version:-$GO_SDK_FALLBACK}"
go_install gotestsum "$GOTESTSUM" "$GOTESTSUM_VERSION"
