// A client of toolshed written with the MCP TypeScript SDK (@modelcontextprotocol/sdk):
// Client over StdioClientTransport (spawning toolshed) or StreamableHTTPClientTransport.
// It runs one scenario of the plan given as its only argument (JSON, see
// tssdk_harness_test.go) and prints what it observed as JSON lines {"step": NAME, ...};
// the Go test asserts on them. The transport is wrapped to record every JSON-RPC
// message sent and received, in order, so that the test sees the wire, not only what
// the SDK made of it.
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const plan = JSON.parse(process.argv[2]);

const started = Date.now();

// emit prints one observation, with the milliseconds since the script started (for
// reading a log, never for asserting on).
function emit(step, data) {
  process.stdout.write(JSON.stringify({ step, ms: Date.now() - started, ...data }) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// deadline resolves to 'timeout' after ms, without keeping node alive.
const deadline = (ms) => new Promise((resolve) => setTimeout(() => resolve('timeout'), ms).unref());

// connect returns a connected client and the log of its wire.
async function connect(target, name) {
  let transport;
  if (target.url) {
    transport = new StreamableHTTPClientTransport(new URL(target.url));
  } else {
    transport = new StdioClientTransport({
      command: target.command,
      args: target.args,
      env: { ...process.env, ...(target.env ?? {}) },
      stderr: target.stderrFile ? fs.openSync(target.stderrFile, 'a') : 'ignore',
    });
  }
  const wire = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ dir: 'out', message });
    return send(message, options);
  };
  // Whatever handler the SDK installs, the wire sees each message first.
  let handler;
  const received = (message, extra) => {
    wire.push({ dir: 'in', message });
    handler?.(message, extra);
  };
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => (handler ? received : undefined),
    set: (h) => {
      handler = h;
    },
  });
  const client = new Client({ name, version: '1.0.0' });
  const errors = [];
  client.onerror = (e) => errors.push(String(e));
  await client.connect(transport);
  return { client, transport, wire, errors };
}

async function close(conn) {
  if (conn.transport instanceof StreamableHTTPClientTransport) {
    await conn.transport.terminateSession();
  }
  await conn.client.close();
}

// call names a tool as the mode lists it: directly with tool search off, through
// tool_call with it on.
function call(name, args) {
  if (plan.mode === 'on') return { name: 'tool_call', arguments: { name, arguments: args } };
  return { name, arguments: args };
}

// waitForTools waits until toolshed has every wanted tool (upstreams over stdio may
// still be starting when the client connects) and returns how many tries it took.
async function waitForTools(client, wanted) {
  for (let attempt = 1; ; attempt++) {
    let missing = [];
    if (plan.mode === 'off') {
      const names = new Set((await client.listTools()).tools.map((t) => t.name));
      missing = wanted.filter((n) => !names.has(n));
    } else {
      for (const name of wanted) {
        const res = await client.callTool({ name: 'tool_describe', arguments: { name } });
        if (res.isError) missing.push(name);
      }
    }
    if (missing.length === 0) return attempt;
    if (attempt >= 240) throw new Error(`toolshed never offered ${missing.join(', ')}`);
    await sleep(250);
  }
}

async function listDirect(name, method) {
  const conn = await connect(plan.direct[name], 'direct');
  try {
    return await conn.client[method]();
  } finally {
    await conn.client.close();
  }
}

// messagesOf returns the wire from the request with the given id to its response.
function exchange(wire, id) {
  const start = wire.findIndex((w) => w.dir === 'out' && w.message.id === id && w.message.method);
  const end = wire.findIndex((w) => w.dir === 'in' && w.message.id === id && !w.message.method);
  return wire.slice(start, end < 0 ? wire.length : end + 1);
}

function lastRequest(wire, method) {
  return [...wire].reverse().find((w) => w.dir === 'out' && w.message.method === method)?.message;
}

const scenarios = {
  // tools/list, tool_search, tool_describe, tool_call and direct calls, with real effects.
  async tools(conn) {
    const { client } = conn;
    emit('ready', { attempts: await waitForTools(client, plan.wanted) });
    emit('list', await client.listTools());
    const direct = {};
    for (const name of Object.keys(plan.direct)) {
      direct[name] = (await listDirect(name, 'listTools')).tools;
    }
    emit('direct_list', { servers: direct });
    if (plan.mode === 'on') {
      emit('search', { result: await client.callTool({ name: 'tool_search', arguments: { query: 'echo back the input message' } }) });
      emit('describe', { result: await client.callTool({ name: 'tool_describe', arguments: { name: 'everything__echo' } }) });
    }
    emit('echo', { result: await client.callTool(call('everything__echo', { message: plan.message })) });
    emit('memory', { result: await client.callTool(call('memory__create_entities', { entities: [plan.entity] })) });
    emit('write', { result: await client.callTool(call('filesystem__write_file', { path: plan.file, content: plan.content })) });
    if (plan.modern) emit('modern', { result: await client.callTool(call('modern__echo', { text: plan.message })) });
  },

  // A long call with a progress token: the upstream's notifications/progress reach the
  // client under its own token, in order, before the result.
  async progress(conn) {
    const { client, wire } = conn;
    emit('ready', { attempts: await waitForTools(client, ['everything__trigger-long-running-operation']) });
    const seen = [];
    const result = await client.callTool(call('everything__trigger-long-running-operation', { duration: 2, steps: 4 }), undefined, {
      onprogress: (p) => seen.push(p),
      timeout: 120000,
    });
    const request = lastRequest(wire, 'tools/call');
    const ex = exchange(wire, request.id);
    const after = wire.slice(wire.indexOf(ex[ex.length - 1]) + 1).filter((w) => w.message.method === 'notifications/progress');
    emit('progress', { request, exchange: ex, after, callbacks: seen, result });
  },

  // The client aborts a long call: it gets its cancellation, toolshed tells the upstream
  // (notifications/cancelled), and it keeps serving.
  async cancel(conn) {
    const { client, wire } = conn;
    emit('ready', { attempts: await waitForTools(client, ['recorder__block', 'recorder__ping', 'everything__echo']) });
    const abort = new AbortController();
    let error = null;
    try {
      await client.callTool(call('recorder__block', { seconds: 120 }), undefined, {
        signal: abort.signal,
        timeout: 180000,
        // The recorder reports progress once its handler runs: the call is upstream.
        onprogress: () => abort.abort('the test cancels the call'),
      });
    } catch (e) {
      error = String(e);
    }
    const request = lastRequest(wire, 'tools/call');
    const cancelled = wire.filter((w) => w.dir === 'out' && w.message.method === 'notifications/cancelled').map((w) => w.message);
    emit('cancelled', { error, request, notifications: cancelled });
    const ping = await client.callTool(call('recorder__ping', {}));
    const echo = await client.callTool(call('everything__echo', { message: 'still serving' }));
    // Give a response to the cancelled request (which must not come) a moment to arrive.
    await sleep(500);
    const late = wire.filter((w) => w.dir === 'in' && w.message.id === request.id).map((w) => w.message);
    emit('after', { ping, echo, late });
  },

  // The client goes away with a call in flight: toolshed cancels it upstream, and
  // exits (stdio) or ends the session (HTTP) without waiting for it.
  async close(conn) {
    const { client, transport } = conn;
    emit('ready', { attempts: await waitForTools(client, ['recorder__block']) });
    let started;
    const upstream = new Promise((resolve) => (started = resolve));
    const pending = client
      .callTool(call('recorder__block', { seconds: 120 }), undefined, { timeout: 180000, onprogress: () => started() })
      .then((result) => ({ result }), (e) => ({ error: String(e) }));
    await upstream;
    // How toolshed ends: by itself once stdin is closed, or killed by the SDK
    // (SIGTERM after 2 seconds, SIGKILL 2 seconds later).
    const child = transport._process;
    const exited = child ? new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))) : null;
    await close(conn);
    conn.closed = true;
    emit('call', await pending);
    emit('exit', { toolshed: exited ? await exited : null });
  },

  // resources/list, read (text and blob), templates, and subscribe/updated.
  async resources(conn) {
    const { client, wire } = conn;
    emit('ready', { attempts: await waitForTools(client, ['everything__toggle-subscriber-updates']) });
    emit('list', await client.listResources());
    emit('templates', await client.listResourceTemplates());
    emit('direct', {
      resources: (await listDirect('everything', 'listResources')).resources,
      templates: (await listDirect('everything', 'listResourceTemplates')).resourceTemplates,
    });
    emit('read_text', await client.readResource({ uri: plan.textURI }));
    emit('read_template', await client.readResource({ uri: plan.templateURI }));
    emit('read_blob', await client.readResource({ uri: plan.blobURI }));

    const updates = [];
    let updated;
    const gotUpdate = new Promise((resolve) => (updated = resolve));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params);
      if (n.params.uri === plan.subscribeURI) updated();
    });
    await client.subscribeResource({ uri: plan.subscribeURI });
    // server-everything sends notifications/resources/updated for the URIs its client
    // (here: toolshed) subscribed to, at once and then every 5 seconds, while this
    // tool has them on.
    const on = await client.callTool(call('everything__toggle-subscriber-updates', {}));
    const outcome = await Promise.race([gotUpdate.then(() => 'updated'), deadline(60000)]);
    await client.unsubscribeResource({ uri: plan.subscribeURI });
    const off = await client.callTool(call('everything__toggle-subscriber-updates', {}));
    emit('subscribe', {
      outcome,
      updates,
      on,
      off,
      subscribeRequest: lastRequest(wire, 'resources/subscribe'),
    });
  },

  // prompts/list and prompts/get with arguments.
  async prompts(conn) {
    const { client } = conn;
    emit('list', await client.listPrompts());
    emit('direct_list', await listDirect('everything', 'listPrompts'));
    emit('args', await client.getPrompt({ name: 'everything__args-prompt', arguments: plan.promptArgs }));
    emit('simple', await client.getPrompt({ name: 'everything__simple-prompt' }));
    const direct = await connect(plan.direct.everything, 'direct');
    emit('direct_args', await direct.client.getPrompt({ name: 'args-prompt', arguments: plan.promptArgs }));
    await direct.client.close();
    let error = null;
    try {
      await client.getPrompt({ name: 'everything__no-such-prompt' });
    } catch (e) {
      error = String(e);
    }
    emit('unknown', { error });
  },
};

const target = { ...plan.target, stderrFile: plan.stderrFile };
const conn = await connect(target, 'toolshed-e2e-tssdk');
emit('connected', {
  serverVersion: conn.client.getServerVersion(),
  capabilities: conn.client.getServerCapabilities(),
  protocolVersion: conn.wire.find((w) => w.dir === 'in' && w.message.result?.protocolVersion)?.message.result.protocolVersion,
});
await scenarios[plan.scenario](conn);
// Errors the client reports while it closes (an SSE stream it was reconnecting,
// aborted) are its own; those before are the test's business.
emit('closing', { errors: [...conn.errors] });
const before = conn.errors.length;
if (!conn.closed) await close(conn);
emit('closed', { errors: conn.errors.slice(before) });
