// Package e2e holds toolshed's end-to-end tests with the real agent clients people run:
// Claude Code, Codex CLI, Gemini CLI, the MCP TypeScript SDK and the AI SDK, installed
// from npm at pinned versions by `scripts/deps.sh --e2e`. Each test builds the toolshed
// binary, starts it as a separate process (toolshed proxy or toolshed serve, over real
// pipes and sockets), drives a client against it with a scripted model
// (internal/fakellm) where a model is needed, and asserts on what the model received
// and what the servers did. Some also need headless Chromium, nginx or PostgreSQL.
//
// They are the end-to-end suite, behind the build tag e2e: `go test ./...` does not run
// them (this package then has no test files). Run them, with internal/release's builds
// of the binary and the image, with
//
//	bash scripts/test.sh --e2e
//
// or alone with `bash scripts/test.sh --e2e ./internal/e2e -run TestCodexServe`.
package e2e
