// protected-v2.mjs is an OAuth-protected MCP server over Streamable HTTP, built with
// the MCP TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0 from .deps/npm, which
// speaks MCP 2026-07-28 and the 2025 revisions through its stateless legacy
// fallback) and its framework-free bearer-auth helpers: requireBearerAuth for the
// 401 challenges, requireScopes for the 403 insufficient_scope of admin_action,
// buildOAuthProtectedResourceMetadata for RFC 9728. internal/testoidc's
// StartProtected with ProtectedOptions{SDK: 2} runs it; it mirrors protected-v1.mjs.
// Configuration comes in the environment: TESTOIDC_ISSUER, the authorization server
// whose JWTs it takes (checked against its JWKS: signature, iss, aud = this server's
// /mcp URL, expiry; the JWKS is fetched again for every token), and TS2_MODULES, the
// node_modules directory the SDK v2 is installed in. It listens on 127.0.0.1 on a
// port of the system's choosing and prints "testoidc: ready URL" on stderr, URL
// being its MCP endpoint, which is also its resource identifier. It never prints
// tokens.
import http from 'node:http';
import { createRequire } from 'node:module';
import * as jose from 'jose';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const {
  McpServer, createMcpHandler, requireBearerAuth, requireScopes, OAuthError, OAuthErrorCode,
  buildOAuthProtectedResourceMetadata, getOAuthProtectedResourceMetadataUrl,
} = require('@modelcontextprotocol/server');
const z = require('zod');

const issuer = process.env.TESTOIDC_ISSUER;
const scopes = ['mcp:read', 'mcp:write'];
const oauthMetadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const jwks = jose.createRemoteJWKSet(new URL(oauthMetadata.jwks_uri), { cooldownDuration: 0, cacheMaxAge: 0 });

function newServer() {
  const s = new McpServer({ name: 'testoidc-protected-v2', version: '2.4.0' });
  const who = (c) => c?.http?.authInfo;
  s.registerTool('whoami', { description: 'The subject and scopes of the caller\'s token.' }, async (c) => ({
    content: [{ type: 'text', text: JSON.stringify({ sub: who(c)?.extra?.sub, scopes: who(c)?.scopes ?? [], groups: who(c)?.extra?.groups ?? [], protocol: who(c)?.extra?.protocol }) }],
  }));
  s.registerTool('echo', { description: 'Echoes its message.', inputSchema: z.object({ message: z.string() }) }, async ({ message }) => ({
    content: [{ type: 'text', text: message }],
  }));
  // admin_action needs mcp:write: the SDK answers a call of it with a token without
  // that scope with 403 and Bearer error="insufficient_scope", scope="mcp:write".
  s.registerTool('admin_action', { description: 'Needs the scope mcp:write.', scopeChallenge: requireScopes('mcp:write') }, async (c) => ({
    content: [{ type: 'text', text: `admin action done for ${who(c)?.extra?.sub}` }],
  }));
  return s;
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const mcpURL = new URL(`http://127.0.0.1:${server.address().port}/mcp`);
  setup(mcpURL);
  console.error(`testoidc: ready ${mcpURL.href}`);
});

function setup(mcpURL) {
  const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(mcpURL);
  const metadata = JSON.stringify(buildOAuthProtectedResourceMetadata({
    oauthMetadata, resourceServerUrl: mcpURL, scopesSupported: scopes, resourceName: 'testoidc protected-v2',
    dangerouslyAllowInsecureIssuerUrl: true, // the provider is on http://127.0.0.1
  }));
  const verifier = {
    async verifyAccessToken(token) {
      let payload;
      try {
        ({ payload } = await jose.jwtVerify(token, jwks, {
          issuer, audience: mcpURL.href, algorithms: ['RS256', 'PS256', 'ES256'],
        }));
      } catch (err) {
        throw new OAuthError(OAuthErrorCode.InvalidToken, `the token does not verify: ${err.code ?? err.message}`);
      }
      return {
        token,
        clientId: String(payload.client_id ?? ''),
        scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
        expiresAt: payload.exp,
        resource: new URL(mcpURL.href),
        extra: { sub: payload.sub, groups: payload.groups ?? [] },
      };
    },
  };
  const gate = requireBearerAuth({ verifier, resourceMetadataUrl, expectedResource: mcpURL });
  const handler = createMcpHandler(newServer, { onerror: (e) => console.error(`protected-v2: ${e?.message ?? e}`) });

  server.on('request', async (req, res) => {
    try {
      const path = new URL(req.url, mcpURL).pathname;
      // RFC 9728 metadata at the path-specific URL and at the root.
      if (req.method === 'GET' && (path === '/.well-known/oauth-protected-resource/mcp' || path === '/.well-known/oauth-protected-resource')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(metadata);
        return;
      }
      if (path !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = Buffer.concat(chunks);
      const ac = new AbortController();
      res.on('close', () => ac.abort());
      const request = new Request(new URL(req.url, mcpURL), {
        method: req.method, headers: req.headers, signal: ac.signal, duplex: 'half',
        body: ['GET', 'HEAD'].includes(req.method) ? undefined : body,
      });
      const auth = await gate(request);
      // whoami also reports the MCP-Protocol-Version header of the call, so that a
      // test sees which revision the client negotiated.
      const authInfo = auth instanceof Response ? undefined
        : { ...auth, extra: { ...auth.extra, protocol: request.headers.get('mcp-protocol-version') ?? '' } };
      const r = authInfo ? await handler.fetch(request, { authInfo }) : auth;
      res.writeHead(r.status, Object.fromEntries(r.headers));
      if (r.body) { for await (const c of r.body) res.write(c); }
      res.end();
    } catch (err) {
      console.error(`protected-v2: ${err?.message ?? err}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
}

process.on('SIGINT', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
