// A client of toolshed written with the AI SDK's MCP client (@ai-sdk/mcp, used by `ai`):
// createMCPClient over its stdio transport (spawning toolshed) or its Streamable HTTP
// transport, with the MCP tools run the way an agent built on the AI SDK runs them:
// client.tools(), then each tool's execute. It runs one scenario of the plan given as
// its only argument (JSON, see tssdk_harness_test.go) and prints what it observed as
// JSON lines {"step": NAME, ...}; the Go test asserts on them. Needs Node 22.
import fs from 'node:fs';
import { createMCPClient } from '@ai-sdk/mcp';
import { StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

const plan = JSON.parse(process.argv[2]);
const started = Date.now();

// emit prints one observation, with the milliseconds since the script started (for
// reading a log, never for asserting on).
function emit(step, data) {
  process.stdout.write(JSON.stringify({ step, ms: Date.now() - started, ...data }) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(target) {
  const uncaught = [];
  let transport;
  if (target.url) {
    transport = { type: 'http', url: target.url };
  } else {
    transport = new StdioMCPTransport({
      command: target.command,
      args: target.args,
      env: { ...process.env, ...(target.env ?? {}) },
      stderr: target.stderrFile ? fs.openSync(target.stderrFile, 'a') : 'ignore',
    });
  }
  const client = await createMCPClient({
    transport,
    clientName: 'toolshed-e2e-aisdk',
    onUncaughtError: (e) => uncaught.push(String(e)),
  });
  return { client, uncaught };
}

// An agent's view of a tool: what the model would be given.
function describeTools(tools) {
  return Object.entries(tools).map(([name, t]) => ({
    name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema?.jsonSchema,
    meta: t._meta,
  }));
}

let callCount = 0;
// execute runs a tool as the AI SDK's agent loop does.
async function execute(tools, name, input, abortSignal) {
  const tool = tools[name];
  if (!tool) throw new Error(`no tool ${name} among ${Object.keys(tools).join(', ')}`);
  return await tool.execute(input, { toolCallId: `call-${++callCount}`, messages: [], abortSignal });
}

// run runs an upstream tool as the mode lists it: directly with tool search off,
// through tool_call with it on.
function run(tools, name, args, abortSignal) {
  if (plan.mode === 'on') return execute(tools, 'tool_call', { name, arguments: args }, abortSignal);
  return execute(tools, name, args, abortSignal);
}

// waitForTools waits until toolshed has every wanted tool (upstreams over stdio may
// still be starting when the client connects, and toolshed's first answers wait for
// them a few seconds only) and returns the tools and the tries. The tools are listed
// once the wanted ones are there: with tool search on, the bridge's descriptions count
// the tools of the servers up when they are listed.
async function waitForTools(client, wanted) {
  for (let attempt = 1; ; attempt++) {
    const tools = await client.tools();
    let missing = [];
    if (plan.mode === 'off') {
      missing = wanted.filter((n) => !tools[n]);
    } else {
      for (const name of wanted) {
        const res = await execute(tools, 'tool_describe', { name });
        if (res.isError) missing.push(name);
      }
    }
    if (missing.length === 0) return { tools: plan.mode === 'on' ? await client.tools() : tools, attempts: attempt };
    if (attempt >= 240) throw new Error(`toolshed never offered ${missing.join(', ')}`);
    await sleep(250);
  }
}

const scenarios = {
  // tools() gives the tools with their schemas; tool_search, tool_describe, tool_call
  // and direct tools run for real.
  async tools({ client }) {
    const { tools, attempts } = await waitForTools(client, plan.wanted);
    emit('ready', { attempts });
    emit('tools', { tools: describeTools(tools) });
    emit('list', await client.listTools());
    const direct = await connect(plan.direct.everything);
    emit('direct_tools', { tools: describeTools(await direct.client.tools()) });
    emit('direct_list', await direct.client.listTools());
    await direct.client.close();
    if (plan.mode === 'on') {
      emit('search', { result: await execute(tools, 'tool_search', { query: 'echo back the input message' }) });
      emit('describe', { result: await execute(tools, 'tool_describe', { name: 'everything__echo' }) });
    }
    emit('echo', { result: await run(tools, 'everything__echo', { message: plan.message }) });
    emit('memory', { result: await run(tools, 'memory__create_entities', { entities: [plan.entity] }) });
    emit('write', { result: await run(tools, 'filesystem__write_file', { path: plan.file, content: plan.content }) });
    if (plan.modern) emit('modern', { result: await run(tools, 'modern__echo', { text: plan.message }) });
  },

  // The agent aborts a running tool (its abortSignal); toolshed keeps serving.
  async cancel({ client }) {
    const { tools, attempts } = await waitForTools(client, ['recorder__block', 'recorder__ping', 'everything__echo']);
    emit('ready', { attempts });
    const abort = new AbortController();
    const call = run(tools, 'recorder__block', { seconds: 120 }, abort.signal);
    // The recorder logs when its handler runs: the call is upstream.
    for (let i = 0; !fs.existsSync(plan.recorderLog) || !fs.readFileSync(plan.recorderLog, 'utf8').includes('event: block started'); i++) {
      if (i > 2400) throw new Error('the block call never reached the recorder');
      await sleep(50);
    }
    abort.abort('the test cancels the call');
    let error = null;
    try {
      await call;
    } catch (e) {
      error = String(e);
    }
    emit('cancelled', { error });
    emit('after', {
      ping: await run(tools, 'recorder__ping', {}),
      echo: await run(tools, 'everything__echo', { message: 'still serving' }),
    });
  },

  // Resources and prompts through the AI SDK client, once server-everything is up.
  async features({ client }) {
    emit('ready', { attempts: (await waitForTools(client, ['everything__echo'])).attempts });
    emit('resources', await client.listResources());
    emit('templates', await client.listResourceTemplates());
    emit('read_text', await client.readResource({ uri: plan.textURI }));
    emit('read_blob', await client.readResource({ uri: plan.blobURI }));
    emit('prompts', await client.listPrompts());
    emit('prompt', await client.getPrompt({ name: 'everything__args-prompt', arguments: plan.promptArgs }));
  },
};

const conn = await connect({ ...plan.target, stderrFile: plan.stderrFile });
emit('connected', {
  protocolVersion: conn.client.initializeResult?.protocolVersion,
  serverInfo: conn.client.serverInfo,
  capabilities: conn.client.initializeResult?.capabilities,
});
await scenarios[plan.scenario](conn);
await conn.client.close();
emit('closed', { uncaught: conn.uncaught });
