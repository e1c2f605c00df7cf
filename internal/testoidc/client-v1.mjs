// client-v1.mjs is an MCP client that signs in with the OAuth support of the MCP
// TypeScript SDK v1 (@modelcontextprotocol/sdk from .deps/auth): an
// OAuthClientProvider kept in memory, given to StreamableHTTPClientTransport as its
// authProvider. internal/testoidc's RunClientV1 runs it. It connects to
// TESTOIDC_MCP_URL; when the server asks for sign-in, the SDK discovers the
// authorization server, registers dynamically and calls redirectToAuthorization,
// which prints the URL on stdout as "testoidc-client: authorize URL". It then reads
// the URL the browser was redirected to from stdin, checks its state, hands the code
// to transport.finishAuth, connects again, and prints "testoidc-client: tools NAME..."
// and, when TESTOIDC_CALL names a tool, calls it with the JSON arguments of
// TESTOIDC_ARGS and prints "testoidc-client: result TEXT". It ends with
// "testoidc-client: done", or "testoidc-client: error MESSAGE" and exit status 1. It
// never prints tokens, codes or secrets.
import crypto from 'node:crypto';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const mcpURL = new URL(process.env.TESTOIDC_MCP_URL);
const redirectURL = process.env.TESTOIDC_REDIRECT_URL ?? 'http://127.0.0.1:49152/callback';
const say = (kind, text) => process.stdout.write(`testoidc-client: ${kind} ${text}\n`);

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// provider is the client's OAuth state, in memory as a CLI would keep it for a run.
const provider = {
  info: undefined,
  saved: undefined,
  verifier: undefined,
  sentState: undefined,
  get redirectUrl() { return redirectURL; },
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK v1 test client',
      redirect_uris: [redirectURL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  state() {
    this.sentState = crypto.randomBytes(16).toString('hex');
    return this.sentState;
  },
  clientInformation() { return this.info; },
  saveClientInformation(info) { this.info = info; },
  tokens() { return this.saved; },
  saveTokens(tokens) { this.saved = tokens; },
  redirectToAuthorization(url) { say('authorize', url.href); },
  saveCodeVerifier(v) { this.verifier = v; },
  codeVerifier() { return this.verifier; },
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  const client = new Client({ name: 'ts-sdk-v1-oauth-client', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

try {
  let client;
  try {
    client = await connect();
    throw new Error('the server let the client in without signing in');
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  const { value: line, done } = await lines.next();
  if (done) throw new Error('stdin closed before the redirect URL came');
  const redirect = new URL(line.trim());
  const q = redirect.searchParams;
  if (q.get('error')) throw new Error(`the authorization server refused: ${q.get('error')}: ${q.get('error_description') ?? ''}`);
  if (q.get('state') !== provider.sentState) throw new Error('the redirect carries another state than the one sent');
  if (!q.get('code')) throw new Error('the redirect carries no code');
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  await transport.finishAuth(q.get('code'));
  client = await connect();
  const { tools } = await client.listTools();
  say('tools', tools.map((t) => t.name).join(' '));
  if (process.env.TESTOIDC_CALL) {
    const res = await client.callTool({ name: process.env.TESTOIDC_CALL, arguments: JSON.parse(process.env.TESTOIDC_ARGS ?? '{}') });
    const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    if (res.isError) throw new Error(`the call failed: ${text}`);
    say('result', JSON.stringify(text));
  }
  await client.close();
  say('done', '');
  process.exit(0);
} catch (err) {
  say('error', String(err?.message ?? err).replace(/\s+/g, ' '));
  process.exit(1);
}
