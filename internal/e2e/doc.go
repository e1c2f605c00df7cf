// Package e2e holds toolshed's end-to-end tests with the real agent clients people run:
// Claude Code, Codex CLI, Gemini CLI, the MCP TypeScript SDK and the AI SDK, installed
// from npm at pinned versions by scripts/deps.sh. Each test builds the toolshed binary,
// starts it as a separate process (toolshed proxy or toolshed serve, over real pipes and
// sockets), drives a client against it with a scripted model (internal/fakellm) where a
// model is needed, and asserts on what the model received and what the servers did.
//
// They are the slow group of the test suite (a minute or more); run them alone with
// `bash scripts/test.sh ./internal/e2e`.
package e2e
