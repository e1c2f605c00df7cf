// Package oauth signs toolshed in to upstream MCP servers that ask for OAuth: it is
// the client half of the MCP authorization specification (2025-11-25).
//
// The protocol work is the go-sdk's: [Login] drives the SDK's
// auth.AuthorizationCodeHandler, which discovers the protected resource metadata
// (RFC 9728) and the authorization server's metadata (RFC 8414, OpenID discovery),
// registers the client (a client ID metadata document, a pre-registered client, or
// dynamic registration with application_type native), and runs the authorization
// code flow with PKCE S256, a single-use state, the resource indicator (RFC 8707),
// and the authorization response's iss checked against the issuer (RFC 9207). What
// this package adds is what the SDK leaves to its caller:
//
//   - the loopback redirect: a listener on 127.0.0.1 that takes one authorization
//     response, whose state it checks once; only loopback redirect URIs are ever
//     registered;
//   - the browser: opened when there is one, the URL printed when there is none;
//   - a [Store] of credentials, each bound to the resource it was issued for and the
//     issuer that issued it: [FileStore] keeps them in the user's data directory;
//   - [Transport], which adds a credential's access token to the requests of the one
//     resource it belongs to, refreshes it before it expires and when the server
//     answers 401 (one refresh per credential at a time, also across processes that
//     share a FileStore, so a refresh token is used once), and turns a refused
//     refresh or an insufficient_scope answer into an error that tells the user what
//     to run;
//   - [Logout], which revokes the token where the server supports it (RFC 7009).
//
// Tokens, refresh tokens and client secrets never appear in this package's errors.
package oauth
