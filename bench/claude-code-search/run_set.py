#!/usr/bin/env python3
"""Drive the real Claude Code CLI against one benchmark set and record what its built-in
ToolSearch returns for every query.

usage: run_set.py --set DIR --name NAME [--sample N --seed 1] [--mode parallel|sequential]
                  [--max-results 5] [--per-turn N] [--port 18410] [--limit K] [--claude BIN]
                  [--workdir /tmp/ccs] [--extra-args "..."]

Writes WORKDIR/runs/NAME/: plan.json (query ids + text; kept under /tmp, never in the repo),
queries.jsonl (the exact query list given to toolshed eval), mcp.json, results.jsonl (one line
per query: Claude Code's tool_reference names), claude.{out,err,debug}, reqlog.jsonl.
"""
import argparse, json, os, random, re, shlex, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.environ.get("CCS_PY", sys.executable)

ap = argparse.ArgumentParser()
ap.add_argument("--set", required=True)
ap.add_argument("--name", required=True)
ap.add_argument("--sample", type=int, default=0)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--mode", default="parallel")
ap.add_argument("--max-results", type=int, default=5)
ap.add_argument("--per-turn", type=int, default=0)
ap.add_argument("--port", type=int, default=18410)
ap.add_argument("--limit", type=int, default=0, help="only the first K queries (smoke tests)")
ap.add_argument("--claude", default=os.environ.get("CLAUDE_BIN", "/tmp/ccs/claude"))
ap.add_argument("--workdir", default="/tmp/ccs")
ap.add_argument("--timeout", type=int, default=1800)
ap.add_argument("--extra-args", default="")
ap.add_argument("--keywordize", action="store_true",
                help="give both searches the query lower-cased, punctuation removed, English stop words (NLTK list) dropped")
ap.add_argument("--queries-file", help="use this queries.jsonl instead of SET/queries.jsonl (probes)")
ap.add_argument("--fix-schemas", action="store_true", help="repair inputSchema keywords Claude Code rejects (see fix_schema)")
ap.add_argument("--max-wait", type=int, default=600, help="longest wait for MCP servers to connect before querying")
ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for Claude Code (default ENABLE_TOOL_SEARCH=true)")
a = ap.parse_args()

run = os.path.join(a.workdir, "runs", a.name)
os.makedirs(run, exist_ok=True)
for f in ("results.jsonl", "raw.jsonl", "reqlog.jsonl"):
    if os.path.exists(os.path.join(run, f)):
        os.remove(os.path.join(run, f))

catalog = os.path.join(a.set, "catalog.json")
queries = [json.loads(l) for l in open(a.queries_file or os.path.join(a.set, "queries.jsonl")) if l.strip()]
if a.sample and a.sample < len(queries):
    rng = random.Random(a.seed)
    queries = rng.sample(queries, a.sample)
if a.limit:
    queries = queries[:a.limit]
STOP = set("""i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he
him his himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
that that'll these those am is are was were be been being have has had having do does did doing a an the and but if or
because as until while of at by for with about against between into through during before after above below to from up
down in out on off over under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't should should've now d ll m o re ve y ain
aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't
mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't""".split())


def keywordize(text):
    words = re.findall(r"[^\W_]+(?:['_-][^\W_]+)*", text.lower())
    kept = [w for w in words if w not in STOP]
    return " ".join(kept) or " ".join(words) or text


if a.keywordize:
    queries = [dict(q, query=keywordize(q["query"])) for q in queries]
# the exact query list (same order) for toolshed eval
with open(os.path.join(run, "queries.jsonl"), "w") as f:
    for q in queries:
        f.write(json.dumps({"id": q["id"], "query": q["query"], "relevant": q["relevant"]}) + "\n")
plan = {"mode": a.mode, "max_results": a.max_results if a.max_results > 0 else None, "per_turn": a.per_turn or None,
        "queries": [{"qid": "%d:%s" % (i, q["id"]), "query": q["query"]} for i, q in enumerate(queries)]}
json.dump(plan, open(os.path.join(run, "plan.json"), "w"))

cat = json.load(open(catalog))
NUMKEYS = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "maxLength", "minLength", "maxItems",
           "minItems", "multipleOf", "maxProperties", "minProperties")


def fix_schema(x):
    """--fix-schemas: numeric keywords written as strings become numbers; draft-4 boolean
    exclusiveMinimum/Maximum become the 2020-12 form. Only what Claude Code rejected."""
    if isinstance(x, list):
        return [fix_schema(v) for v in x]
    if not isinstance(x, dict):
        return x
    y = {k: fix_schema(v) for k, v in x.items()}
    for k in NUMKEYS:
        v = y.get(k)
        if isinstance(v, str):
            try:
                y[k] = int(v) if v.strip().lstrip("-").isdigit() else float(v)
            except ValueError:
                y.pop(k)
    for ek, bk in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(y.get(ek), bool):
            if y[ek] and isinstance(y.get(bk), (int, float)):
                y[ek] = y.pop(bk)
            else:
                y.pop(ek)
    return y


sdir = os.path.join(run, "servers")
os.makedirs(sdir, exist_ok=True)
servers = {}
for i, s in enumerate(cat["servers"]):
    tools = []
    for t in s["tools"]:
        t = dict(t)
        if isinstance(t.get("annotations"), dict):
            # JSON nulls in annotations are a serialization artifact of the catalog (a server
            # omits an unset hint); Claude Code rejects the whole tools/list over them.
            t["annotations"] = {k: v for k, v in t["annotations"].items() if v is not None}
        if a.fix_schemas and "inputSchema" in t:
            t["inputSchema"] = fix_schema(t["inputSchema"])
        tools.append(t)
    sf = os.path.join(sdir, "%03d.json" % i)
    json.dump({"name": s["name"], "tools": tools}, open(sf, "w"))
    servers[s["name"]] = {"command": PY, "args": [os.path.join(HERE, "mcp_catalog_server.py"), sf]}
json.dump({"mcpServers": servers}, open(os.path.join(run, "mcp.json"), "w"), indent=1)
plan["warmup"] = {"debug": os.path.join(run, "claude.debug"), "servers": list(servers), "max_wait_s": a.max_wait}
json.dump(plan, open(os.path.join(run, "plan.json"), "w"))
if os.path.exists(os.path.join(run, "claude.debug")):
    os.remove(os.path.join(run, "claude.debug"))

home = os.path.join(a.workdir, "home")
os.makedirs(os.path.join(home, ".claude"), exist_ok=True)
cwd = os.path.join(a.workdir, "work")
os.makedirs(cwd, exist_ok=True)
env = dict(os.environ)
env.update({"HOME": home, "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"), "ANTHROPIC_API_KEY": "sk-ant-dummy-000",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % int(os.environ.get("CCS_PROXY_PORT") or a.port),
            "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "DISABLE_COST_WARNINGS": "1",
            "NO_PROXY": "127.0.0.1,localhost", "IS_SANDBOX": "1", "ENABLE_TOOL_SEARCH": "true",
            # Claude Code's own temporary files (claude-0/, cc-socks/) go to the workdir, not /tmp.
            "TMPDIR": os.path.join(a.workdir, "tmp")})
os.makedirs(env["TMPDIR"], exist_ok=True)
for kv in a.env:
    k, v = kv.split("=", 1)
    if v == "":
        env.pop(k, None)
    else:
        env[k] = v

fake = subprocess.Popen([PY, os.path.join(HERE, "fake_search_llm.py"), str(a.port), os.path.join(run, "plan.json"),
                         os.path.join(run, "raw.jsonl"), os.path.join(run, "reqlog.jsonl")],
                        stderr=open(os.path.join(run, "fake.err"), "w"))
time.sleep(0.8)
cmd = [a.claude, "-p", "Use ToolSearch to find tools for each request.", "--mcp-config", os.path.join(run, "mcp.json"),
       "--strict-mcp-config", "--dangerously-skip-permissions", "--output-format", "json", "--no-session-persistence",
       "--debug-file", os.path.join(run, "claude.debug")] + shlex.split(a.extra_args)
t0 = time.time()
try:
    rc = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=open(os.path.join(run, "claude.out"), "w"),
                        stderr=open(os.path.join(run, "claude.err"), "w"), timeout=a.timeout).returncode
except subprocess.TimeoutExpired:
    rc = "timeout"
secs = time.time() - t0
fake.send_signal(signal.SIGTERM)
fake.wait()

# map Claude Code names back to bare benchmark names
import re
def norm(x):
    return re.sub(r"[^a-zA-Z0-9_-]", "_", x)
full2bare = {}
for s in cat["servers"]:
    for t in s["tools"]:
        full2bare["mcp__%s__%s" % (norm(s["name"]), norm(t["name"]))] = t["name"]
raw = {}
if os.path.exists(os.path.join(run, "raw.jsonl")):
    for l in open(os.path.join(run, "raw.jsonl")):
        o = json.loads(l)
        raw[o["qid"]] = o
unmapped = set()
with open(os.path.join(run, "results.jsonl"), "w") as f:
    for i, q in enumerate(queries):
        qid = "%d:%s" % (i, q["id"])
        o = raw.get(qid)
        if o is None:
            f.write(json.dumps({"qid": qid, "id": q["id"], "missing": True}) + "\n")
            continue
        bare = []
        for n in o["names"]:
            if n in full2bare:
                bare.append(full2bare[n])
            else:
                bare.append("<%s>" % n)
                if not n.startswith("mcp__"):
                    pass
                else:
                    unmapped.add(n)
        f.write(json.dumps({"qid": qid, "id": q["id"], "names": o["names"], "bare": bare, "gap_ms": o.get("gap_ms"),
                            "raw_text": None if isinstance(o["raw"], list) else o["raw"], "extra_text": o.get("extra_text"),
                            "is_error": o.get("is_error")}) + "\n")
meta = {}
if os.path.exists(os.path.join(run, "raw.jsonl.meta.json")):
    meta = json.load(open(os.path.join(run, "raw.jsonl.meta.json")))
skipped, failed = set(), set()
for l in open(os.path.join(run, "claude.debug"), errors="replace"):
    m = re.search(r'MCP server "([^"]+)" Skipping tool "([^"]+)"', l)
    if m:
        skipped.add(m.group(1) + "/" + m.group(2))
    m = re.search(r'MCP server "([^"]+)" Failed to fetch tools', l)
    if m:
        failed.add(m.group(1))
summary = {"name": a.name, "rc": rc, "secs": round(secs, 1), "queries": len(queries), "answered": len(raw),
           "catalog_tools": len(full2bare), "announced_mcp_tools": meta.get("announced_mcp_tools"),
           "warm_wait_s": meta.get("waited_s"), "pending_servers": meta.get("pending"),
           "skipped_tools": sorted(skipped), "failed_servers": sorted(failed), "unmapped_mcp_names": sorted(unmapped)[:20]}
json.dump(summary, open(os.path.join(run, "summary.json"), "w"), indent=1)
print(json.dumps(summary))
