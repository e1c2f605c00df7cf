// provider.mjs runs oidc-provider (from .deps/auth) as the authorization server of
// toolshed's OAuth tests; internal/testoidc starts it. Its configuration comes as JSON
// in TESTOIDC_CONFIG (see provider.go), it listens on 127.0.0.1 on a port of the
// system's choosing, and once it serves it prints "testoidc: ready ISSUER" on stderr.
//
// Besides oidc-provider's own endpoints it serves:
//   /interaction/UID          the login and consent pages (plain HTML forms), checking
//                             the test users' fixed passwords;
//   POST /__testoidc/rotate   a new signing key (control token required): tokens are
//                             signed with it from now on, and the JWKS publishes it and
//                             the previous key only.
// It never prints tokens, codes or secrets.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const cfg = JSON.parse(process.env.TESTOIDC_CONFIG);

async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid: crypto.randomUUID(), alg: 'RS256', use: 'sig' };
}

const users = new Map(cfg.users.map((u) => [u.name, u]));
const resourceScopes = cfg.resource_scopes.join(' ');

function configuration(keys, issuer) {
  return {
    clients: cfg.clients,
    jwks: { keys },
    cookies: { keys: [cfg.cookie_key] },
    scopes: ['openid', 'offline_access', ...cfg.resource_scopes],
    claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
    pkce: { required: () => true },
    // Refresh tokens go to every client allowed the refresh_token grant: oidc-provider's
    // default wants offline_access together with prompt=consent, which MCP clients do not send.
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    rotateRefreshToken: true,
    ttl: {
      AccessToken: cfg.access_token_ttl,
      ClientCredentials: cfg.access_token_ttl,
      RefreshToken: cfg.refresh_token_ttl,
    },
    findAccount: async (ctx, id) => {
      const u = users.get(id);
      if (!u) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, name: id, email: `${id}@example.test`, groups: u.groups ?? [] }),
      };
    },
    // The access tokens carry the user's groups, for tests that map claims to profiles.
    extraTokenClaims: async (ctx, token) => {
      const u = token.accountId ? users.get(token.accountId) : undefined;
      return u?.groups?.length ? { groups: u.groups } : undefined;
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (ctx, client, oneOf) => (oneOf ? oneOf[0] : undefined),
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource) => ({
          scope: resourceScopes,
          audience: resource,
          accessTokenTTL: cfg.access_token_ttl,
          accessTokenFormat: cfg.opaque_access_tokens ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // Client ID metadata documents are fetched from the tests' loopback servers:
    // oidc-provider's guard against special-use addresses would refuse them.
    fetch: (url, options) => {
      delete options.dispatcher;
      return globalThis.fetch(url, options);
    },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = `<!DOCTYPE html><title>error</title><h1>oidc-provider error</h1><p id="error">${esc(out.error)}</p><p id="error_description">${esc(out.error_description)}</p>`;
    },
  };
}

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res, status, title, body) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!DOCTYPE html><html><head><title>${esc(title)}</title></head><body><h1>${esc(title)}</h1>${body}</body></html>`);
}

async function readForm(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString());
}

let provider;
let handler; // provider.callback(), made once per provider
let keys;

async function interaction(req, res, url) {
  const [, , uid, action] = url.pathname.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  const { prompt, params, session } = details;
  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') {
      return page(res, 200, 'Sign in', `<form id="login" method="post" action="/interaction/${esc(uid)}/login">
<p>Client ${esc(params.client_id)} asks you to sign in.</p>
<input type="text" name="login" autocomplete="username">
<input type="password" name="password">
<button type="submit">Sign in</button></form>`);
    }
    const missing = prompt.details.missingResourceScopes ?? {};
    const list = Object.entries(missing).map(([r, s]) => `<li>${esc(r)}: ${esc(s.join(' '))}</li>`).join('');
    return page(res, 200, 'Authorize', `<p>Client ${esc(params.client_id)} asks for access for ${esc(session.accountId)}:</p><ul>${list}</ul>
<form id="consent" method="post" action="/interaction/${esc(uid)}/confirm"><input type="hidden" name="confirm" value="yes"><button type="submit">Allow</button></form>
<form id="deny" method="post" action="/interaction/${esc(uid)}/abort"><button type="submit">Deny</button></form>`);
  }
  if (req.method !== 'POST') return page(res, 405, 'Method not allowed', '');
  const form = await readForm(req);
  switch (action) {
    case 'login': {
      const u = users.get(form.get('login') ?? '');
      if (prompt.name !== 'login') return page(res, 400, 'Not a login step', '');
      const digest = (v) => crypto.createHash('sha256').update(v).digest();
      if (!u || !crypto.timingSafeEqual(digest(u.password), digest(form.get('password') ?? ''))) {
        return page(res, 401, 'Sign in failed', '<p id="error">wrong user name or password</p>');
      }
      return provider.interactionFinished(req, res, { login: { accountId: u.name } }, { mergeWithLastSubmission: false });
    }
    case 'confirm': {
      if (prompt.name !== 'consent') return page(res, 400, 'Not a consent step', '');
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [indicator, scope] of Object.entries(d.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scope.join(' '));
      }
      const grantId = await grant.save();
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    case 'abort':
      return provider.interactionFinished(req, res, {
        error: 'access_denied', error_description: 'the user denied the request',
      }, { mergeWithLastSubmission: false });
    default:
      return page(res, 404, 'Not found', '');
  }
}

async function control(req, res, url) {
  const want = Buffer.from(`Bearer ${cfg.control_token}`);
  const got = Buffer.from(req.headers.authorization ?? '');
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
    res.writeHead(401).end();
    return;
  }
  if (req.method === 'POST' && url.pathname === '/__testoidc/rotate') {
    keys = [await newKey(), keys[0]];
    provider = makeProvider(provider.issuer);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  res.writeHead(404).end();
}

function makeProvider(issuer) {
  const p = new Provider(issuer, configuration(keys, issuer));
  p.on('server_error', (ctx, err) => console.error('testoidc: server_error:', err.message));
  handler = p.callback();
  return p;
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  try {
    if (url.pathname.startsWith('/interaction/')) return await interaction(req, res, url);
    if (url.pathname.startsWith('/__testoidc/')) return await control(req, res, url);
    return handler(req, res);
  } catch (err) {
    console.error('testoidc:', req.method, url.pathname, err.message);
    if (!res.headersSent) page(res, 400, 'Interaction failed', `<p id="error">${esc(err.message)}</p>`);
  }
});

keys = [await newKey()];
server.listen(cfg.port ?? 0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = makeProvider(issuer);
  console.error(`testoidc: ready ${issuer}`);
});
process.on('SIGINT', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
