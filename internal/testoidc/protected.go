package testoidc

import (
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// ProtectedOptions configures a protected MCP server. The zero value is the TypeScript
// SDK v1 server.
type ProtectedOptions struct {
	// SDK is the major version of the MCP TypeScript SDK the server is built on: 0 or
	// 1 for protected-v1.mjs (@modelcontextprotocol/sdk 1.x and its Express
	// middleware, from .deps/auth), 2 for protected-v2.mjs (@modelcontextprotocol/server
	// 2.4.0 and its framework-free bearer-auth helpers, from .deps/npm), which speaks
	// MCP 2026-07-28 as well as the 2025 revisions.
	SDK int
}

// StartProtected runs an OAuth-protected MCP server that takes p's JWTs, until the test
// ends, and returns its MCP endpoint, http://127.0.0.1:PORT/mcp, which is also its
// resource identifier (the resource of its tokens, and the aud it checks). Its
// protected resource metadata is at /.well-known/oauth-protected-resource/mcp (named
// in its 401 challenges) and at /.well-known/oauth-protected-resource.
func StartProtected(t testing.TB, p *Provider, opts ProtectedOptions) (url string) {
	t.Helper()
	env := []string{"TESTOIDC_ISSUER=" + p.issuer}
	script := "protected-v1.mjs"
	switch opts.SDK {
	case 0, 1:
	case 2:
		script = "protected-v2.mjs"
		env = append(env, "TS2_MODULES="+filepath.Join(testupstream.DepsDir(t), "npm", "node_modules"))
	default:
		t.Fatalf("testoidc: ProtectedOptions.SDK is %d: the TypeScript SDK v1 (1) and v2 (2) servers are built", opts.SDK)
	}
	cmd := nodeCommand(t, script, env)
	log := testupstream.Start(t, cmd, func(stderr string) bool { return readyLine.MatchString(stderr) })
	return readyLine.FindStringSubmatch(log.String())[1]
}
