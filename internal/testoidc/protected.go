package testoidc

import (
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// ProtectedOptions configures a protected MCP server. The zero value is the TypeScript
// SDK v1 server.
type ProtectedOptions struct {
	// SDK is the major version of the MCP TypeScript SDK the server is built on: 0 or 1
	// (only v1 is built so far).
	SDK int
}

// StartProtected runs an OAuth-protected MCP server that takes p's JWTs, until the test
// ends, and returns its MCP endpoint, http://127.0.0.1:PORT/mcp, which is also its
// resource identifier (the resource of its tokens, and the aud it checks). Its
// protected resource metadata is at /.well-known/oauth-protected-resource/mcp (named
// in its 401 challenges) and at /.well-known/oauth-protected-resource.
func StartProtected(t testing.TB, p *Provider, opts ProtectedOptions) (url string) {
	t.Helper()
	if opts.SDK != 0 && opts.SDK != 1 {
		t.Fatalf("testoidc: ProtectedOptions.SDK is %d: only the TypeScript SDK v1 server (SDK 1) is built", opts.SDK)
	}
	cmd := nodeCommand(t, "protected-v1.mjs", []string{"TESTOIDC_ISSUER=" + p.issuer})
	log := testupstream.Start(t, cmd, func(stderr string) bool { return readyLine.MatchString(stderr) })
	return readyLine.FindStringSubmatch(log.String())[1]
}
