// A test upstream built with the MCP TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4.0, installed by scripts/deps.sh), which speaks MCP 2026-07-28. Started by
// testupstream.TS2Stdio and testupstream.TS2HTTP; not for use on its own.
//
//   node server.mjs stdio reject|serve    serveStdio(factory, {legacy})
//   node server.mjs http reject|stateless PORT
//                                         createMcpHandler(factory, {legacy}) on 127.0.0.1:PORT/mcp
//
// legacy "reject" makes a modern-only server (an initialize gets -32022); "serve" and
// "stateless" serve both eras. Environment:
//   TS2_MODULES  the node_modules directory the SDK is installed in (required)
//   WIRE_LOG     a file that gets every message the server receives: stdio lines as
//                read, HTTP requests as "HTTP METHOD Mcp-Method=... Mcp-Name=... BODY"
//   LATE         adds the tool "late" (the server says tools/list_changed): after LATE
//                milliseconds when it is a number, else once the file LATE exists
//
// Tools: echo {text} returns text; confirm {what} asks for an elicitation through
// MRTR (input_required) and reports the answer and the requestState it got back
// ("confirmed=true state=round1:WHAT"); ask_llm {q} asks for a sampling through MRTR and
// reports the answer's content; slow waits until it is cancelled (or 60 s).
import fs from 'node:fs';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import { createRequire } from 'node:module';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const { McpServer, createMcpHandler, inputRequired, acceptedContent, inputResponse } = require('@modelcontextprotocol/server');
const { serveStdio, StdioServerTransport } = require('@modelcontextprotocol/server/stdio');
const z = require('zod');

// Written synchronously, before the message is handled: a test that got the answer
// finds the request in the log.
const wireFd = process.env.WIRE_LOG ? fs.openSync(process.env.WIRE_LOG, 'a') : null;
const wire = wireFd === null ? null : { write: (d) => fs.writeSync(wireFd, d) };

// LATE: the tool late comes once, for every server instance: stdio instances alive
// then get it (the SDK says tools/list_changed on their connection), later ones have it
// from the start, and over HTTP, where each request has an instance of its own, the
// handler's notify tells the subscriptions/listen streams.
const [mode, legacy, port] = process.argv.slice(2);
let lateNow = false;
let handler = null;
const lateWaiting = new Set();
const addLate = (s) => s.registerTool('late', { description: 'added later' },
  async () => ({ content: [{ type: 'text', text: 'late' }] }));
const lateCome = () => {
  lateNow = true;
  for (const s of lateWaiting) addLate(s);
  lateWaiting.clear();
  handler?.notify.toolsChanged();
};
const late = process.env.LATE;
if (late && /^[0-9]+$/.test(late)) setTimeout(lateCome, Number(late));
else if (late) { const poll = setInterval(() => { if (fs.existsSync(late)) { clearInterval(poll); lateCome(); } }, 50); poll.unref(); }

const factory = () => {
  const s = new McpServer({ name: 'ts2-test', version: '2.4.0' }, { capabilities: { tools: { listChanged: true }, logging: {} } });
  s.registerTool('echo', { description: 'echo text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  s.registerTool('confirm', { description: 'asks the user to confirm', inputSchema: z.object({ what: z.string() }) },
    async ({ what }, c) => {
      const ok = acceptedContent(c.mcpReq.inputResponses, 'ok', z.object({ yes: z.boolean() }));
      if (!ok) return inputRequired({ requestState: 'round1:' + what, inputRequests: {
        ok: inputRequired.elicit({ message: `Really ${what}?`, requestedSchema: z.object({ yes: z.boolean() }) }) } });
      return { content: [{ type: 'text', text: `confirmed=${ok.yes} state=${c.mcpReq.requestState?.() ?? '?'}` }] };
    });
  s.registerTool('ask_llm', { description: 'asks the client for a sampling', inputSchema: z.object({ q: z.string() }) },
    async ({ q }, c) => {
      const v = inputResponse(c.mcpReq.inputResponses, 'llm');
      if (v.kind !== 'sampling') return inputRequired({ inputRequests: {
        llm: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: q } }], maxTokens: 50 }) } });
      return { content: [{ type: 'text', text: 'llm said: ' + JSON.stringify(v.result.content) }] };
    });
  // A tool without an input schema gets the context as its only argument.
  s.registerTool('slow', { description: 'waits until cancelled' }, async (c) => {
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 60000);
      c.mcpReq?.signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); });
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  if (lateNow) addLate(s);
  else if (process.env.LATE && mode === 'stdio') lateWaiting.add(s);
  return s;
};

const onerror = (e) => process.stderr.write('ts2 server error: ' + (e?.message ?? e) + '\n');
if (mode === 'stdio') {
  const input = new PassThrough();
  process.stdin.on('data', (d) => { wire?.write(d); input.write(d); });
  process.stdin.on('end', () => input.end());
  serveStdio(factory, { legacy, onerror, transport: new StdioServerTransport(input, process.stdout) });
} else if (mode === 'http') {
  const h = createMcpHandler(factory, { legacy, onerror });
  handler = h;
  http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    wire?.write(`HTTP ${req.method} Mcp-Method=${req.headers['mcp-method'] ?? ''} Mcp-Name=${req.headers['mcp-name'] ?? ''} ${body}\n`);
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    const r = await h.fetch(new Request('http://127.0.0.1:' + port + req.url, { method: req.method, headers: req.headers,
      body: ['GET', 'HEAD'].includes(req.method) ? undefined : body, duplex: 'half', signal: ac.signal }));
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) { for await (const c of r.body) res.write(c); }
    res.end();
  }).listen(Number(port), '127.0.0.1', () => process.stderr.write('listening ' + port + '\n'));
} else {
  process.stderr.write('usage: node server.mjs stdio reject|serve | http reject|stateless PORT\n');
  process.exit(2);
}
