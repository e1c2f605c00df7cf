// A test client built with the MCP TypeScript SDK v2 (@modelcontextprotocol/client
// 2.4.0, installed by scripts/deps.sh), driven line by line from a Go test: started by
// testupstream.TS2MatrixClient for the protocol matrix of cmd/toolshed; not for use
// on its own.
//
//   node matrixclient.mjs auto|legacy|VERSION stdio CMD ARGS...
//   node matrixclient.mjs auto|legacy|VERSION http URL
//
// auto and legacy are the SDK's versionNegotiation modes; any other word pins that
// version. The client declares elicitation (form) and answers it: accept {yes: true}
// when the requested schema has a property "yes", else decline. With TS2_ELICIT_URL=1
// it declares URL-mode elicitation too, and accepts each (the user agreed to open the
// page, which the test then plays).
//
// Environment: TS2_MODULES, the node_modules directory the SDK is installed in;
// TS2_BEARER, a bearer token sent with every HTTP request.
//
// Each line on stdin is one JSON command, each line on stdout one JSON event:
//   {"id":N,"op":"list"}                            -> {"id":N,"result":{"tools":[...]}}
//   {"id":N,"op":"call","name":T,"arguments":{..}}  -> {"id":N,"result":CallToolResult}
//   {"id":N,"op":"abort","target":M}                   aborts call M (its AbortSignal)
//   failures                                        -> {"id":N,"error":{"code":C,"message":M}}
// and, unasked: {"event":"connected","version":V} once connected (or
// {"event":"failed","error":M}, then exit 1), {"event":"tools_list_changed"} for each
// list change (legacy notification or subscriptions/listen alike), and
// {"event":"elicitation","message":M[,"url":U]} for each elicitation answered.
import readline from 'node:readline';
import { createRequire } from 'node:module';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');

const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const [mode, kind, ...rest] = process.argv.slice(2);
const versionNegotiation = mode === 'auto' || mode === 'legacy' ? { mode } : { mode: { pin: mode } };
const client = new Client({ name: 'toolshed-matrix-ts2', version: '2.4.0' }, {
  capabilities: { elicitation: process.env.TS2_ELICIT_URL === '1' ? { form: {}, url: {} } : { form: {} } },
  versionNegotiation,
  listChanged: { tools: { onChanged: () => emit({ event: 'tools_list_changed' }) } },
});
client.setRequestHandler('elicitation/create', async (r) => {
  emit({ event: 'elicitation', message: r.params.message, ...(r.params.mode === 'url' ? { url: r.params.url } : {}) });
  if (r.params.mode === 'url') return { action: 'accept' };
  if (r.params.requestedSchema?.properties?.yes) return { action: 'accept', content: { yes: true } };
  return { action: 'decline' };
});

const transport = kind === 'stdio'
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' })
  : new StreamableHTTPClientTransport(new URL(rest[0]), process.env.TS2_BEARER ? { requestInit: { headers: { Authorization: `Bearer ${process.env.TS2_BEARER}` } } } : undefined);
try {
  await client.connect(transport);
} catch (e) {
  emit({ event: 'failed', error: String(e?.message ?? e) });
  process.exit(1);
}
emit({ event: 'connected', version: client.getNegotiatedProtocolVersion?.() ?? '' });

const aborts = new Map();
const fail = (id, e) => emit({ id, error: { code: e?.code ?? 0, message: String(e?.message ?? e) } });
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let cmd;
  try { cmd = JSON.parse(line); } catch (e) { fail(null, e); return; }
  const { id, op } = cmd;
  if (op === 'list') {
    client.listTools().then((r) => emit({ id, result: r }), (e) => fail(id, e));
  } else if (op === 'call') {
    const ac = new AbortController();
    aborts.set(id, ac);
    client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, { signal: ac.signal })
      .then((r) => emit({ id, result: r }), (e) => fail(id, e))
      .finally(() => aborts.delete(id));
  } else if (op === 'abort') {
    aborts.get(cmd.target)?.abort('cancelled by the test');
  } else {
    fail(id, new Error('unknown op ' + op));
  }
});
rl.on('close', async () => { await client.close().catch(() => {}); process.exit(0); });
