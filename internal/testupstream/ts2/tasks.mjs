// A test upstream of the MCP Tasks extension (io.modelcontextprotocol/tasks), built by
// hand on the MCP TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0, installed by
// scripts/deps.sh), which does not implement the extension: the server advertises it
// under capabilities.extensions, its tools answer with a task handle (resultType
// "task"), and tasks/get, tasks/update and tasks/cancel are answered by handlers of
// the low-level server (only its 3-argument setRequestHandler takes a method the SDK
// does not know). Modern-only (legacy "reject"), over stdio or Streamable HTTP. Started
// by testupstream.TS2TaskStdio and testupstream.TS2TaskHTTP; not for use on its own.
//
//   node tasks.mjs             over stdio
//   node tasks.mjs http PORT   createMcpHandler on 127.0.0.1:PORT/mcp
//
// Environment:
//   TS2_MODULES  the node_modules directory the SDK is installed in (required)
//   WIRE_LOG     a file that gets every message the server receives: stdio lines as
//                read, HTTP requests as "HTTP METHOD Mcp-Method=... Mcp-Name=... BODY"
//   PID_FILE     a file the server writes its process id to when it starts
//
// Tools (each returns a task handle at once, pollIntervalMs 50, ttlMs 60000):
//   job {ms}    the task completes after ms milliseconds with the text "job done after MS ms"
//   needs {}    as job {ms: 100}, listed with execution.taskSupport "required" (the SDK's
//               codec drops execution from tools/list, so it is added to the line on its
//               way out)
//   ask {}      the task asks for the user's name (status input_required, inputRequests
//               {name: elicitation/create}); tasks/update with inputResponses.name
//               completes it with "hello NAME"
//   late {}     over stdio only: the call gets no answer until the client cancels it
//               (notifications/cancelled); then the server makes a task (late-N, which
//               runs until cancelled) and answers the cancelled call with its handle
//               anyway, as a server does whose answer crosses the cancel
//   pushed {}  over stdio only: a task with pollIntervalMs 3600000 that completes with
//               "pushed done" once a subscriptions/listen names it in
//               notifications.taskIds, which then gets its notifications/tasks
// Over stdio, a subscriptions/listen with notifications.taskIds is answered here rather
// than by the SDK (which knows no taskIds): acknowledged with the ids it names, and
// each change of those tasks is sent as notifications/tasks (the task as tasks/get
// answers it, stamped with the listen's id), until notifications/cancelled ends it.
// tasks/get of an unknown task, and tasks/update or tasks/cancel of one, get -32602.
import fs from 'node:fs';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import { createRequire } from 'node:module';

const require = createRequire((process.env.TS2_MODULES ?? '.') + '/');
const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
const { serveStdio, StdioServerTransport } = require('@modelcontextprotocol/server/stdio');
const z = require('zod');

if (process.env.PID_FILE) fs.writeFileSync(process.env.PID_FILE, String(process.pid));
const wireFd = process.env.WIRE_LOG ? fs.openSync(process.env.WIRE_LOG, 'a') : null;
const tasks = new Map(); // taskId -> task (shared by the sessions of the process)
let seq = 0;
const now = () => new Date().toISOString();

function create(state) {
  const id = 'task-' + (++seq);
  const t = { taskId: id, status: 'working', createdAt: now(), lastUpdatedAt: now(), ttlMs: 60000, pollIntervalMs: 50, ...state };
  tasks.set(id, t);
  return t;
}
const handle = (t) => ({ resultType: 'task', taskId: t.taskId, status: t.status, createdAt: t.createdAt,
  lastUpdatedAt: t.lastUpdatedAt, ttlMs: t.ttlMs, pollIntervalMs: t.pollIntervalMs });
function settle(t, status, result) {
  if (['completed', 'cancelled', 'failed'].includes(t.status)) return;
  clearTimeout(t.timer);
  Object.assign(t, { status, lastUpdatedAt: now() });
  if (result) t.result = result;
  delete t.inputRequests;
  pushTask(t);
}
// detailed is the task as tasks/get answers it, without its resultType.
function detailed(t) {
  const out = { taskId: t.taskId, status: t.status, createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt, ttlMs: t.ttlMs, pollIntervalMs: t.pollIntervalMs };
  if (t.result) out.result = t.result;
  if (t.inputRequests) out.inputRequests = t.inputRequests;
  return out;
}
// listens maps the JSON of the id of each stdio subscriptions/listen with taskIds to
// the task ids it names.
const listens = new Map();
// pushTask sends notifications/tasks for t on each listen that names it.
function pushTask(t) {
  for (const [key, ids] of listens) {
    if (!ids.includes(t.taskId)) continue;
    const params = { ...detailed(t), _meta: { 'io.modelcontextprotocol/subscriptionId': JSON.parse(key) } };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks', params }) + '\n');
  }
}
function unknown(id) {
  const e = new Error('Unknown task: ' + id);
  e.code = -32602;
  return e;
}
const taskParams = { params: z.object({ taskId: z.string() }).passthrough() };

const factory = () => {
  const s = new McpServer({ name: 'ts2-tasks', version: '2.4.0' },
    { capabilities: { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } } });
  s.registerTool('job', { description: 'a task that completes after ms milliseconds', inputSchema: z.object({ ms: z.number() }) },
    async ({ ms }) => {
      const t = create({});
      t.timer = setTimeout(() => settle(t, 'completed', { content: [{ type: 'text', text: `job done after ${ms} ms` }] }), ms);
      return handle(t);
    });
  s.registerTool('needs', { description: 'runs only as a task', inputSchema: z.object({}) }, async () => {
    const t = create({});
    t.timer = setTimeout(() => settle(t, 'completed', { content: [{ type: 'text', text: 'needs done' }] }), 100);
    return handle(t);
  });
  s.registerTool('ask', { description: 'a task that asks for a name', inputSchema: z.object({}) }, async () => {
    const t = create({ status: 'input_required', inputRequests: { name: { method: 'elicitation/create', params: {
      mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } } } });
    return handle(t);
  });
  // Answered on the stdio line itself (see lateCalls); the SDK never sees its calls.
  s.registerTool('late', { description: 'a task handle that comes only after the call is cancelled (stdio)', inputSchema: z.object({}) },
    async () => ({ content: [{ type: 'text', text: 'late answers over stdio only' }], isError: true }));
  s.registerTool('pushed', { description: 'a task that completes once listened to (stdio)', inputSchema: z.object({}) }, async () => {
    const t = create({ pollIntervalMs: 3600000, pushed: true });
    return handle(t);
  });
  const ls = s.server;
  ls.setRequestHandler('tasks/get', taskParams, async (p) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknown(p.taskId);
    return { resultType: 'complete', ...detailed(t) };
  });
  // The SDK takes inputResponses out of the params (they are MRTR's) into the context.
  ls.setRequestHandler('tasks/update', taskParams, async (p, c) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknown(p.taskId);
    const answer = (c?.mcpReq?.inputResponses ?? p.inputResponses)?.name;
    if (t.inputRequests?.name && answer) {
      settle(t, 'completed', { content: [{ type: 'text', text: `hello ${answer.content?.name}` }] });
    }
    return { resultType: 'complete' };
  });
  ls.setRequestHandler('tasks/cancel', taskParams, async (p) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknown(p.taskId);
    settle(t, 'cancelled');
    return { resultType: 'complete' };
  });
  return s;
};

const onerror = (e) => process.stderr.write('ts2 tasks server error: ' + (e?.message ?? e) + '\n');
const [mode, port] = process.argv.slice(2);
// needsExecution adds execution.taskSupport to the tool needs in a tools/list answer.
const needsExecution = (text) => text.replace('{"name":"needs",', '{"name":"needs","execution":{"taskSupport":"required"},');
if (mode === 'http') {
  const h = createMcpHandler(factory, { legacy: 'reject', onerror });
  http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (wireFd !== null) fs.writeSync(wireFd, `HTTP ${req.method} Mcp-Method=${req.headers['mcp-method'] ?? ''} Mcp-Name=${req.headers['mcp-name'] ?? ''} ${body}\n`);
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    const r = await h.fetch(new Request('http://127.0.0.1:' + port + req.url, { method: req.method, headers: req.headers,
      body: ['GET', 'HEAD'].includes(req.method) ? undefined : body, duplex: 'half', signal: ac.signal }));
    const headers = Object.fromEntries(r.headers);
    delete headers['content-length'];
    res.writeHead(r.status, headers);
    if (r.body) { for await (const c of r.body) res.write(needsExecution(Buffer.from(c).toString())); }
    res.end();
  }).listen(Number(port), '127.0.0.1', () => process.stderr.write('listening ' + port + '\n'));
} else {
const input = new PassThrough();
// lateCalls holds the ids of the calls of late not answered yet: each is answered when
// its notifications/cancelled comes, with the handle of a task made then.
const lateCalls = new Set();
let lateSeq = 0;
// intercept handles one line read that is the server's own rather than the SDK's (a
// call of late, a subscriptions/listen with taskIds, or the cancel of either), and
// reports whether it was one.
function intercept(line) {
  let msg;
  try { msg = JSON.parse(line); } catch { return false; }
  if (msg?.method === 'tools/call' && msg.params?.name === 'late' && msg.id !== undefined) {
    lateCalls.add(JSON.stringify(msg.id));
    return true;
  }
  const taskIds = msg?.params?.notifications?.taskIds;
  if (msg?.method === 'subscriptions/listen' && msg.id !== undefined && Array.isArray(taskIds) && taskIds.length > 0) {
    const listenKey = JSON.stringify(msg.id);
    const ids = taskIds.filter((id) => tasks.has(id));
    listens.set(listenKey, ids);
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: { taskIds: ids } } }) + '\n');
    for (const id of ids) {
      const t = tasks.get(id);
      if (t.pushed) settle(t, 'completed', { content: [{ type: 'text', text: 'pushed done' }] });
    }
    return true;
  }
  const key = JSON.stringify(msg?.params?.requestId);
  if (msg?.method === 'notifications/cancelled' && listens.delete(key)) return true;
  if (msg?.method !== 'notifications/cancelled' || !lateCalls.delete(key)) return false;
  const t = { taskId: 'late-' + (++lateSeq), status: 'working', createdAt: now(), lastUpdatedAt: now(), ttlMs: 60000, pollIntervalMs: 50 };
  tasks.set(t.taskId, t);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(key), result: handle(t) }) + '\n');
  return true;
}
let read = '';
process.stdin.on('data', (d) => {
  if (wireFd !== null) fs.writeSync(wireFd, d);
  read += d;
  let i;
  while ((i = read.indexOf('\n')) >= 0) {
    const line = read.slice(0, i + 1);
    read = read.slice(i + 1);
    if (!intercept(line)) input.write(line);
  }
});
process.stdin.on('end', () => { if (read) input.write(read); input.end(); });
const output = new PassThrough();
let pending = '';
output.on('data', (d) => {
  pending += d;
  let i;
  while ((i = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, i + 1);
    pending = pending.slice(i + 1);
    process.stdout.write(needsExecution(line));
  }
});
serveStdio(factory, { legacy: 'reject', onerror, transport: new StdioServerTransport(input, output) });
}
