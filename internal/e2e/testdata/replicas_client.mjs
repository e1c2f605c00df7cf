// A TypeScript SDK client population for the replica tests (replicas_nginx_test.go):
// plan.sessions sessions through nginx, each doing plan.rounds rounds of tool_search,
// tool_describe and two tool_calls (everything's echo with a message unique to the
// request, filesystem's read of the session's own file), every answer checked. It
// prints one JSON line per observation, then {"step":"paused"}, waits for a line on
// stdin (the test kills a replica meanwhile), does plan.rounds more rounds and prints
// {"step":"done",...}.
//
// The SDK does not initialize again by itself when a session is gone: a request on a
// session the server no longer knows throws StreamableHTTPError with code 404. This
// client does what an agent's client must then do: connect again (a new transport and
// initialize, which nginx sends to a live replica) and retry the round.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import readline from 'node:readline';

const plan = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const opts = { timeout: 30000 };

async function connect(i) {
  const client = new Client({ name: `ts-replica-${i}`, version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(plan.url));
  await client.connect(transport, opts);
  out({ step: 'session', i, id: transport.sessionId ?? '' });
  return { client, transport };
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// round runs one round on s and returns what was wrong with the answers ([] if none).
async function round(s, i, r) {
  const bad = [];
  const c = s.conn.client;
  const found = await c.callTool({ name: 'tool_search', arguments: { query: 'echo a message back', limit: 10 } }, undefined, opts);
  if (!JSON.parse(text(found)).matches?.some((m) => m.name === 'everything__echo')) bad.push(`search: ${text(found).slice(0, 200)}`);
  const def = await c.callTool({ name: 'tool_describe', arguments: { name: 'filesystem__read_text_file' } }, undefined, opts);
  if (JSON.parse(text(def)).name !== 'filesystem__read_text_file') bad.push(`describe: ${text(def).slice(0, 200)}`);
  const msg = `ts session ${i} round ${r} ${Math.random().toString(36).slice(2)}`;
  const echo = await c.callTool({ name: 'tool_call', arguments: { name: 'everything__echo', arguments: { message: msg } } }, undefined, opts);
  if (text(echo) !== `Echo: ${msg}`) bad.push(`echo: want ${msg}, got ${text(echo).slice(0, 200)}`);
  const file = plan.files[i];
  const read = await c.callTool({ name: 'tool_call', arguments: { name: 'filesystem__read_text_file', arguments: { path: file.path } } }, undefined, opts);
  if (text(read) !== file.content) bad.push(`read: want ${file.content}, got ${text(read).slice(0, 200)}`);
  return bad;
}

async function rounds(s, i, from, n) {
  for (let r = from; r < from + n; r++) {
    for (let attempt = 0; ; attempt++) {
      try {
        const bad = await round(s, i, r);
        s.rounds++;
        for (const b of bad) out({ step: 'mismatch', i, round: r, what: b });
        s.mismatched += bad.length;
        break;
      } catch (e) {
        const status = e instanceof StreamableHTTPError ? e.code : 0;
        out({ step: 'error', i, round: r, status, message: String(e?.message ?? e).slice(0, 300) });
        if (status === 404 && attempt === 0) {
          s.reconnects++;
          try { await s.conn.client.close(); } catch {}
          s.conn = await connect(i);
          continue;
        }
        s.errors++;
        break;
      }
    }
  }
}

const sessions = [];
for (let i = 0; i < plan.sessions; i++) {
  sessions.push({ conn: await connect(i), rounds: 0, reconnects: 0, errors: 0, mismatched: 0 });
}
await Promise.all(sessions.map((s, i) => rounds(s, i, 0, plan.rounds)));
out({ step: 'paused' });
const rl = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once('line', resolve));
rl.close();
await Promise.all(sessions.map((s, i) => rounds(s, i, plan.rounds, plan.rounds)));
for (const s of sessions) {
  s.id = s.conn.transport.sessionId ?? '';
  try { if (s.conn.transport.sessionId) await s.conn.transport.terminateSession(); } catch (e) { out({ step: 'close-error', message: String(e?.message ?? e) }); }
  await s.conn.client.close();
}
out({ step: 'done', sessions: sessions.map((s) => ({ rounds: s.rounds, reconnects: s.reconnects, errors: s.errors, mismatched: s.mismatched, id: s.id })) });
