#!/usr/bin/env python3
"""Scripted fake Anthropic Messages API that makes Claude Code run its own ToolSearch on
benchmark queries and records what Claude Code returns.

usage: fake_search_llm.py PORT PLAN.json OUT.jsonl [REQLOG.jsonl]

PLAN.json: {"queries": [{"qid": "...", "query": "..."}, ...],
            "mode": "parallel" | "sequential", "max_results": 5 | null,
            "per_turn": N (parallel mode: ToolSearch calls per assistant message, default all),
            "warmup": {"debug": Claude Code's --debug-file, "servers": [names], "max_wait_s": 600}}
With "warmup", the model first makes no-match ToolSearch calls, 3 s apart, until the debug log
shows every MCP server connected (or failed) and the announced deferred MCP tool count is stable;
OUT.meta.json records that count and the wait.

parallel:   the first assistant turn(s) hold `per_turn` ToolSearch tool_use blocks each, every
            query in the plan once; Claude Code runs them and sends all tool_results back.
sequential: one ToolSearch call per assistant turn, one query after another; the time from the
            end of our response to the next request is recorded as `gap_ms` (ToolSearch run +
            Claude Code's own turn overhead).
When the plan is exhausted the model answers the text "DONE" (Claude Code then exits).

OUT.jsonl gets one line per tool_result: {"qid", "tool_use_id", "names": [tool_reference names
in order], "raw": the tool_result content, "extra_text": text blocks that came with the results
in the same user message, "gap_ms"}.
Requests without tools (side queries) get "DONE". Each request's summary (not the body) is
appended to REQLOG.jsonl if given; the first tool-bearing request body is saved next to OUT as
OUT.firstreq.json.
"""
import json, re, sys, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, PLANF, OUT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
REQLOG = sys.argv[4] if len(sys.argv) > 4 else None
PLAN = json.load(open(PLANF))
Q = PLAN["queries"]
MODE = PLAN.get("mode", "parallel")
MAXR = PLAN.get("max_results", 5)
PER_TURN = PLAN.get("per_turn") or len(Q)
lock = threading.Lock()
state = {"n": 0, "id2q": {}, "recorded": set(), "last_sent": None, "first_saved": False,
         "warm_done": "warmup" not in PLAN, "warm_prev": None, "warm_turns": 0, "t0": time.time()}
MCPNAME = re.compile(r"mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+")


def announced(body):
    """Distinct mcp__ names the request mentions (deferred-tool announcements)."""
    return set(MCPNAME.findall(json.dumps(body.get("messages", [])) + json.dumps(body.get("system", ""))))


def servers_settled():
    """True when Claude Code's debug log shows every configured MCP server connected or failed."""
    w = PLAN["warmup"]
    try:
        txt = open(w["debug"], errors="replace").read()
    except OSError:
        return False, []
    pending = []
    for name in w["servers"]:
        q = '"%s"' % name
        ok = any(x in txt for x in (q + ": Successfully connected", q + " Failed to fetch tools", q + ": Connection failed",
                                    q + ": Connection timed out", q + " Connection failed"))
        if not ok:
            pending.append(name)
    return not pending, pending


def warmup_step(body):
    """Returns blocks for a warm-up turn, or None when the MCP servers have settled."""
    w = PLAN["warmup"]
    names = announced(body)
    settled, pending = servers_settled()
    waited = time.time() - state["t0"]
    if (settled and state["warm_turns"] >= 1 and len(names) == state["warm_prev"]) or waited > w.get("max_wait_s", 600):
        state["warm_done"] = True
        json.dump({"announced_mcp_tools": len(names), "warm_turns": state["warm_turns"], "waited_s": round(waited, 1),
                   "settled": settled, "pending": pending}, open(OUT + ".meta.json", "w"))
        return None
    state["warm_prev"] = len(names)
    state["warm_turns"] += 1
    time.sleep(3)
    return [{"type": "tool_use", "id": "toolu_warm%03d%s" % (state["warm_turns"], uuid.uuid4().hex[:12]),
             "name": "ToolSearch", "input": {"query": "qqqzzzwarmup"}}]


def tool_input(q):
    d = {"query": q["query"]}
    if MAXR is not None:
        d["max_results"] = MAXR
    return d


def record_results(body):
    """Record every ToolSearch tool_result in the conversation that is not recorded yet."""
    now = time.time()
    out = []
    msgs = body.get("messages", [])
    for m in msgs:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        texts = [b.get("text", "") for b in m["content"] if b.get("type") == "text"]
        for b in m["content"]:
            if b.get("type") != "tool_result":
                continue
            tid = b.get("tool_use_id")
            if tid not in state["id2q"] or tid in state["recorded"]:
                continue
            state["recorded"].add(tid)
            c = b.get("content")
            names = []
            if isinstance(c, list):
                names = [x.get("tool_name") for x in c if x.get("type") == "tool_reference"]
                if not names:  # through toolshed proxy: each reference is a line of text
                    names = [m.group(1) for x in c if x.get("type") == "text"
                             for m in [re.match(r"Tool (\S+) is loaded", x.get("text", ""))] if m]
            gap = None
            if MODE == "sequential" and state["last_sent"] is not None:
                gap = round((now - state["last_sent"]) * 1000, 1)
            out.append({"qid": state["id2q"][tid], "tool_use_id": tid, "names": names, "raw": c,
                        "is_error": b.get("is_error", False), "extra_text": texts, "gap_ms": gap})
    if out:
        with open(OUT, "a") as f:
            for o in out:
                f.write(json.dumps(o) + "\n")


def next_blocks(body):
    names = [t.get("name", "") for t in body.get("tools", []) or []]
    if not names or "ToolSearch" not in names:
        return [{"type": "text", "text": "DONE"}]
    if not state["warm_done"]:
        wb = warmup_step(body)
        if wb is not None:
            return wb
    issued = len(state["id2q"])
    if issued >= len(Q):
        return [{"type": "text", "text": "DONE"}]
    k = 1 if MODE == "sequential" else PER_TURN
    blocks = []
    for i in range(issued, min(len(Q), issued + k)):
        tid = "toolu_%05d%s" % (i, uuid.uuid4().hex[:14])
        state["id2q"][tid] = Q[i]["qid"]
        blocks.append({"type": "tool_use", "id": tid, "name": "ToolSearch", "input": tool_input(Q[i])})
    return blocks


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw)
        except Exception:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        if not path.endswith("/v1/messages"):
            return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}})
        with lock:
            state["n"] += 1
            idx = state["n"]
            has_ts = any(t.get("name") == "ToolSearch" for t in body.get("tools", []) or [])
            if has_ts and not state["first_saved"]:
                state["first_saved"] = True
                json.dump({"headers": dict(self.headers), "body": body}, open(OUT + ".firstreq.json", "w"))
            record_results(body)
            blocks = next_blocks(body)
            if REQLOG:
                with open(REQLOG, "a") as f:
                    f.write(json.dumps({"n": idx, "t": time.time(), "bytes": len(raw), "model": body.get("model"),
                                        "ntools": len(body.get("tools", []) or []), "has_toolsearch": has_ts,
                                        "nmsgs": len(body.get("messages", [])),
                                        "answer": [b.get("type") for b in blocks]}) + "\n")
        self.anthropic(body, idx, blocks)
        with lock:
            state["last_sent"] = time.time()

    def anthropic(self, body, idx, blocks):
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        mid = "msg_fake%05d" % idx
        model = body.get("model", "claude-fake")
        usage = {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self._json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                    "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        buf = []

        def ev(name, obj):
            buf.append(("event: %s\ndata: %s\n\n" % (name, json.dumps(obj))).encode())

        ev("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                             "content": [], "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 20}})
        ev("message_stop", {"type": "message_stop"})
        self.wfile.write(b"".join(buf))
        self.wfile.flush()


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
    print("fake search llm on 127.0.0.1:%d plan=%s (%d queries, %s)" % (PORT, PLANF, len(Q), MODE), file=sys.stderr, flush=True)
    srv.serve_forever()
