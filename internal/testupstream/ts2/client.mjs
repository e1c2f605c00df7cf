// A test client built with the MCP TypeScript SDK v2 (@modelcontextprotocol/client
// 2.4.0, installed by scripts/deps.sh). Started by testupstream.TS2Client; not for use
// on its own.
//
//   node client.mjs MODE STEPS stdio CMD ARGS...    node client.mjs MODE STEPS http URL
//
// MODE is the client's versionNegotiation: "auto", "legacy", or a version to pin
// ("2026-07-28"). STEPS is a JSON array of what to do, in order:
//   {"op":"list"}                               tools/list
//   {"op":"call","name":N,"args":{…}}           tools/call
//   {"op":"cancel","name":N,"args":{…},"ms":M}  tools/call, aborted after M ms
// The client declares form elicitation and answers every elicitation by accepting
// with {"approve": true, "yes": true} (toolshed's approval prompt, the test server's
// confirm). It prints one JSON object: the negotiated version, each step's result
// or error, and the messages of the elicitations it answered.
//
// Environment: TS2_MODULES, the node_modules directory the SDK is installed in.
import { createRequire } from 'node:module';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');

const [mode, stepsJSON, kind, ...rest] = process.argv.slice(2);
const steps = JSON.parse(stepsJSON);
const versionNegotiation = mode === 'auto' || mode === 'legacy' ? { mode } : { mode: { pin: mode } };
const client = new Client({ name: 'ts2-client', version: '2.4.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation });
const out = { version: null, steps: [], elicitations: [] };
client.setRequestHandler('elicitation/create', async (r) => {
  out.elicitations.push(r.params.message);
  return { action: 'accept', content: { approve: true, yes: true } };
});
const transport = kind === 'stdio'
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' })
  : new StreamableHTTPClientTransport(new URL(rest[0]));
const errorOf = (e) => ({ error: { code: e.code ?? null, message: String(e.message ?? e) } });
try {
  await client.connect(transport);
  out.version = client.getNegotiatedProtocolVersion?.() ?? null;
  for (const s of steps) {
    try {
      switch (s.op) {
        case 'list':
          out.steps.push({ tools: (await client.listTools()).tools.map((t) => t.name) });
          break;
        case 'call':
          out.steps.push({ result: await client.callTool({ name: s.name, arguments: s.args ?? {} }) });
          break;
        case 'cancel': {
          const ac = new AbortController();
          const timer = setTimeout(() => ac.abort('the test cancels it'), s.ms ?? 200);
          try {
            out.steps.push({ result: await client.callTool({ name: s.name, arguments: s.args ?? {} }, { signal: ac.signal }) });
          } finally {
            clearTimeout(timer);
          }
          break;
        }
        default:
          out.steps.push({ error: { message: `unknown step ${s.op}` } });
      }
    } catch (e) {
      out.steps.push(errorOf(e));
    }
  }
} catch (e) {
  out.connect = errorOf(e).error;
}
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
