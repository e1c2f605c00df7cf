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
// MRTR (input_required) and reports the answer; slow waits until it is cancelled
// (or 60 s).
import fs from 'node:fs';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import { createRequire } from 'node:module';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const { McpServer, createMcpHandler, inputRequired, acceptedContent } = require('@modelcontextprotocol/server');
const { serveStdio, StdioServerTransport } = require('@modelcontextprotocol/server/stdio');
const z = require('zod');

// Written synchronously, before the message is handled: a test that got the answer
// finds the request in the log.
const wireFd = process.env.WIRE_LOG ? fs.openSync(process.env.WIRE_LOG, 'a') : null;
const wire = wireFd === null ? null : { write: (d) => fs.writeSync(wireFd, d) };

const factory = () => {
  const s = new McpServer({ name: 'ts2-test', version: '2.4.0' }, { capabilities: { tools: { listChanged: true }, logging: {} } });
  s.registerTool('echo', { description: 'echo text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  s.registerTool('confirm', { description: 'asks the user to confirm', inputSchema: z.object({ what: z.string() }) },
    async ({ what }, c) => {
      const ok = acceptedContent(c.mcpReq.inputResponses, 'ok', z.object({ yes: z.boolean() }));
      if (!ok) return inputRequired({ requestState: 'round1:' + what, inputRequests: {
        ok: inputRequired.elicit({ message: `Really ${what}?`, requestedSchema: z.object({ yes: z.boolean() }) }) } });
      return { content: [{ type: 'text', text: `confirmed=${ok.yes}` }] };
    });
  // A tool without an input schema gets the context as its only argument.
  s.registerTool('slow', { description: 'waits until cancelled' }, async (c) => {
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 60000);
      c.mcpReq?.signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); });
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  const late = process.env.LATE;
  if (late) {
    const add = () => s.registerTool('late', { description: 'added later' },
      async () => ({ content: [{ type: 'text', text: 'late' }] }));
    if (/^[0-9]+$/.test(late)) setTimeout(add, Number(late));
    else { const poll = setInterval(() => { if (fs.existsSync(late)) { clearInterval(poll); add(); } }, 50); poll.unref(); }
  }
  return s;
};

const [mode, legacy, port] = process.argv.slice(2);
const onerror = (e) => process.stderr.write('ts2 server error: ' + (e?.message ?? e) + '\n');
if (mode === 'stdio') {
  const input = new PassThrough();
  process.stdin.on('data', (d) => { wire?.write(d); input.write(d); });
  process.stdin.on('end', () => input.end());
  serveStdio(factory, { legacy, onerror, transport: new StdioServerTransport(input, process.stdout) });
} else if (mode === 'http') {
  const h = createMcpHandler(factory, { legacy, onerror });
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
