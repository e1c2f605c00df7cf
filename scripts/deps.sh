#!/usr/bin/env bash
# Installs the real MCP components that toolshed's tests run against, into .deps/
# (git-ignored). Idempotent, and quick when everything is already in place.
#
#   .deps/npm/   npm ci of scripts/npm/package-lock.json: the reference MCP servers
#                (@modelcontextprotocol/server-everything, -memory, -filesystem), the
#                MCP Inspector CLI, the MCP conformance suite, and a Node 22 binary
#                (the npm package "node") for the two tools that need Node >= 22.
#   .deps/bin/everything-server
#                the go-sdk's conformance everything-server, built with go install
#                from the go-sdk version that go.mod requires (GO_SDK_FALLBACK if none).
#
# Needs: go, node (>= 20) and npm on PATH, and the npm registry and the Go module
# proxy. Nothing here is fetched at run time of toolshed itself; internal/testupstream
# only looks in .deps/ and tells the test to run this script when something is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS="$ROOT/.deps"
NPM_SRC="$ROOT/scripts/npm"
NPM_DIR="$DEPS/npm"
BIN_DIR="$DEPS/bin"
GO_SDK=github.com/modelcontextprotocol/go-sdk
GO_SDK_FALLBACK=v1.8.0 # used only while go.mod does not require the go-sdk

say() { printf 'deps: %s\n' "$*"; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

for tool in go node npm; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is not on PATH (on Debian: apt-get install -y nodejs npm; Go from go.dev)"
done

# --- npm packages ---------------------------------------------------------------
# The stamp is the SHA-256 of package.json followed by package-lock.json; the Go
# helpers in internal/testupstream compute the same hash to spot a stale install.
npm_hash=$(cat "$NPM_SRC/package.json" "$NPM_SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
npm_stamp="$NPM_DIR/.stamp"
node22="$NPM_DIR/node_modules/node/bin/node"
if [ -f "$npm_stamp" ] && [ "$(cat "$npm_stamp")" = "$npm_hash" ] && [ -x "$node22" ]; then
	say "npm packages up to date in .deps/npm (lockfile ${npm_hash:0:12})"
else
	say "installing npm packages into .deps/npm with npm ci (node $(node --version), npm $(npm --version))"
	start=$SECONDS
	rm -rf "$NPM_DIR"
	mkdir -p "$NPM_DIR"
	cp "$NPM_SRC/package.json" "$NPM_SRC/package-lock.json" "$NPM_DIR/"
	# --loglevel=error hides the EBADENGINE warnings: the Inspector and the conformance
	# suite declare Node >= 22 and are run with the Node 22 installed here.
	npm ci --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error
	[ -x "$node22" ] || die "npm ci did not install the Node 22 binary at $node22"
	v=$("$node22" --version)
	case "$v" in v22.*) ;; *) die "$node22 is $v, expected v22.x" ;; esac
	echo "$npm_hash" >"$npm_stamp"
	say "installed npm packages in $((SECONDS - start))s; Node 22 is $v"
fi

# --- go-sdk conformance everything-server ----------------------------------------
sdk_version=$(cd "$ROOT" && go list -m -f '{{.Version}}' "$GO_SDK" 2>/dev/null || true)
go_stamp="$BIN_DIR/everything-server.stamp"
if [ -n "$sdk_version" ]; then
	want="$GO_SDK $sdk_version"
else
	want="$GO_SDK $GO_SDK_FALLBACK"
fi
if [ -f "$go_stamp" ] && [ "$(cat "$go_stamp")" = "$want" ] && [ -x "$BIN_DIR/everything-server" ]; then
	say "everything-server up to date in .deps/bin ($want)"
else
	start=$SECONDS
	mkdir -p "$BIN_DIR"
	rm -f "$go_stamp"
	# go install pkg@version builds in module mode outside this module: it never
	# touches go.mod/go.sum, and the go-sdk's own go.sum pins its dependencies.
	say "building everything-server from $want${sdk_version:+ (the version go.mod requires)}"
	GOBIN="$BIN_DIR" go install "$GO_SDK/conformance/everything-server@${want#* }"
	echo "$want" >"$go_stamp"
	say "built .deps/bin/everything-server in $((SECONDS - start))s"
fi
