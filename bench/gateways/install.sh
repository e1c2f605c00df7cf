#!/usr/bin/env bash
# Installs the peer gateways bench/gateways compares toolshed with (mcp-hub, supergateway,
# mcp-proxy), at the versions package-lock.json pins, into bench/gateways/node_modules
# (git-ignored). Run by hand before `go run .`; CI never runs it.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --ignore-scripts
