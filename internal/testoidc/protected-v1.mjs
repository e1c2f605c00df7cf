// protected-v1.mjs is an OAuth-protected MCP server over Streamable HTTP, built with
// the MCP TypeScript SDK v1 (@modelcontextprotocol/sdk from .deps/auth) and its
// bearer-auth middleware; internal/testoidc's StartProtected runs it. Configuration
// comes in the environment: TESTOIDC_ISSUER, the authorization server whose JWTs it
// takes (checked against its JWKS: signature, iss, aud = this server's /mcp URL,
// expiry; the JWKS is fetched again for every token, so that a rotation at the
// provider shows at once). It listens on 127.0.0.1 on a port of the system's choosing and prints
// "testoidc: ready URL" on stderr, URL being its MCP endpoint, which is also its
// resource identifier. It never prints tokens.
import crypto from 'node:crypto';
import express from 'express';
import * as jose from 'jose';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

const issuer = process.env.TESTOIDC_ISSUER;
const scopes = ['mcp:read', 'mcp:write'];
const oauthMetadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const jwks = jose.createRemoteJWKSet(new URL(oauthMetadata.jwks_uri), { cooldownDuration: 0, cacheMaxAge: 0 });

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const mcpURL = new URL(`http://127.0.0.1:${server.address().port}/mcp`);
  setup(mcpURL);
  console.error(`testoidc: ready ${mcpURL.href}`);
});

function setup(mcpURL) {
  const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(mcpURL);
  const verifier = {
    async verifyAccessToken(token) {
      let payload;
      try {
        ({ payload } = await jose.jwtVerify(token, jwks, {
          issuer, audience: mcpURL.href, algorithms: ['RS256', 'PS256', 'ES256'],
        }));
      } catch (err) {
        throw new InvalidTokenError(`the token does not verify: ${err.code ?? err.message}`);
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
  // RFC 9728 metadata at the path-specific URL (the SDK's router) and at the root.
  app.use(mcpAuthMetadataRouter({
    oauthMetadata, resourceServerUrl: mcpURL, scopesSupported: scopes, resourceName: 'testoidc protected-v1',
  }));
  app.get('/.well-known/oauth-protected-resource', (req, res) => res.json({
    resource: mcpURL.href, authorization_servers: [issuer], scopes_supported: scopes, resource_name: 'testoidc protected-v1',
  }));
  const auth = requireBearerAuth({ verifier, resourceMetadataUrl, expectedResource: mcpURL });
  const requireWrite = requireBearerAuth({ verifier, requiredScopes: ['mcp:write'], resourceMetadataUrl, expectedResource: mcpURL });
  // admin_action needs mcp:write: a call of it is checked with requiredScopes, which
  // answers 403 with Bearer error="insufficient_scope", scope="mcp:write".
  const stepUp = (req, res, next) => {
    const msgs = [req.body].flat();
    if (msgs.some((m) => m?.method === 'tools/call' && m?.params?.name === 'admin_action')) {
      return requireWrite(req, res, next);
    }
    return next();
  };
  const transports = new Map();
  app.all('/mcp', express.json(), auth, stepUp, async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (sid && !transport) {
      res.status(404).json({ jsonrpc: '2.0', error: { code: -32001, message: 'unknown session' }, id: null });
      return;
    }
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
}

function newServer() {
  const s = new McpServer({ name: 'testoidc-protected-v1', version: '1.0.0' });
  s.registerTool('whoami', { description: 'The subject and scopes of the caller\'s token.' }, async (extra) => ({
    content: [{ type: 'text', text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, scopes: extra.authInfo?.scopes ?? [], groups: extra.authInfo?.extra?.groups ?? [] }) }],
  }));
  s.registerTool('echo', { description: 'Echoes its message.', inputSchema: { message: z.string() } }, async ({ message }) => ({
    content: [{ type: 'text', text: message }],
  }));
  s.registerTool('admin_action', { description: 'Needs the scope mcp:write.' }, async (extra) => ({
    content: [{ type: 'text', text: `admin action done for ${extra.authInfo?.extra?.sub}` }],
  }));
  // The caller's subject as a resource, for tests of what reads resources as whom.
  s.registerResource('whoami', 'whoami://me', { mimeType: 'application/json' }, async (uri, extra) => ({
    contents: [{ uri: uri.href, text: JSON.stringify({ sub: extra.authInfo?.extra?.sub }) }],
  }));
  return s;
}

process.on('SIGINT', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
