package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks) lets a server
// answer a tools/call with a task handle (resultType "task": taskId, status,
// pollIntervalMs, ttlMs) rather than the tool's result; the client then asks for the
// task's state with tasks/get (whose answer inlines the result once the task is done),
// answers the task's input requests with tasks/update, and stops it with tasks/cancel.
// Neither SDK implements it, so toolshed brokers it itself, passing tasks through:
//
//   - A client that declared the extension in its request's _meta gets the handle, its
//     taskId replaced by an opaque id (taskHandle) that names the upstream, the
//     upstream's task and the principal that started it. tasks/get, tasks/update and
//     tasks/cancel are taken out of the client's stream by the connection (see
//     stdioConn.observe, httpConn.fastServe) before the SDK's server, which has no
//     handler for them, sees them; only that principal's ids are found in the task
//     table, and the request goes to the owning upstream with its own task id and
//     toolshed's envelope.
//   - Any other client gets the tool's result: toolshed polls the upstream's tasks/get
//     at the task's pollIntervalMs, for up to the server's call_timeout, relaying the
//     task's input requests to the client (as elicitation or sampling requests on the
//     call's session) and the client's cancellation to the upstream (tasks/cancel).
//
// Upstream side, toolshed sends the tasks/* requests itself: on the connection it wraps
// (stdio, SSE), and to a Streamable HTTP server of 2026-07-28, which has no sessions,
// in POSTs of its own (the SDK's client sends only the requests it knows).

// tasksExtension is the extension's identifier, under capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// Bounds of the task table and of polling.
const (
	// maxTasks bounds the tasks toolshed remembers for its clients: past it, the one
	// closest to its expiry is forgotten (its id then gets "unknown task").
	maxTasks = 4096
	// maxTaskTTL bounds how long a task is remembered, whatever its ttlMs says (null
	// is unlimited in the extension).
	maxTaskTTL = time.Hour
	// minPollInterval and maxPollInterval bound the pollIntervalMs toolshed honours
	// when it polls a task for a client, and defaultPollInterval is used without one.
	minPollInterval     = 20 * time.Millisecond
	maxPollInterval     = 5 * time.Second
	defaultPollInterval = time.Second
	// maxTaskInputRounds bounds the rounds of input a polled task may ask for.
	maxTaskInputRounds = 10
)

// ErrTaskRequests is the error of a task handle from an upstream toolshed cannot ask
// about it: one spoken to in MCP 2025 over Streamable HTTP (tasks are of 2026-07-28,
// and there the go-sdk's client owns the session).
var ErrTaskRequests = errors.New("the server answered with a task, which toolshed can follow only on servers of MCP 2026-07-28 or over stdio")

// upTask is a task of an upstream, on the connection that started it: requests about
// it go there, never to a later connection to the server (a restarted stdio server
// numbers its tasks afresh, and its "task-1" may then be another principal's).
type upTask struct {
	u  *Upstream
	l  *link
	id string // the task's id on the upstream
	// user is who started it, on a per-user server: its requests are signed with
	// that user's credential, as the call was (see usersignin.go).
	user string
}

// taskEntry is a task of an upstream, as one principal knows it.
type taskEntry struct {
	task    upTask
	owner   principal
	expires time.Time
	// asked holds the input request keys the upstream asked in its latest answer
	// about the task: tasks/update passes on only answers to those.
	asked map[string]bool
}

// taskTable maps the opaque task ids handed to clients to the upstreams' tasks. Its
// zero value is empty and ready.
type taskTable struct {
	mu   sync.Mutex
	byID map[string]*taskEntry
	// limit, when not 0, replaces maxTasks (tests).
	limit int
}

// taskKey keys the opaque task ids: drawn when the process starts, so that an id means
// nothing to another process, nor after a restart.
var taskKey = func() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return key
}()

// taskHandle is the opaque id of the upstream task id of server for principal who: a
// keyed hash, which says nothing of the upstream, its id or the principal, and which
// differs for every principal.
func taskHandle(server, id string, who principal) string {
	m := hmac.New(sha256.New, taskKey)
	for _, s := range []string{server, id, who.profile} {
		m.Write([]byte(strconv.Itoa(len(s))))
		m.Write([]byte{':'})
		m.Write([]byte(s))
	}
	m.Write(who.cred[:])
	return "toolshed-task-" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:24])
}

// record remembers task, of server, for its owner for ttl, and returns its opaque id.
func (t *taskTable) record(server string, task upTask, owner principal, ttl time.Duration) string {
	handle := taskHandle(server, task.id, owner)
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]*taskEntry{}
	}
	if _, known := t.byID[handle]; !known && len(t.byID) >= t.max() {
		t.evict(now)
	}
	t.byID[handle] = &taskEntry{task: task, owner: owner, expires: now.Add(ttl)}
	return handle
}

func (t *taskTable) max() int {
	if t.limit > 0 {
		return t.limit
	}
	return maxTasks
}

// evict makes room for one task: it forgets the expired ones, else the one closest
// to its expiry. t.mu is held.
func (t *taskTable) evict(now time.Time) {
	var soonest string
	for id, e := range t.byID {
		if now.After(e.expires) {
			delete(t.byID, id)
			continue
		}
		if soonest == "" || e.expires.Before(t.byID[soonest].expires) {
			soonest = id
		}
	}
	if len(t.byID) >= t.max() && soonest != "" {
		delete(t.byID, soonest)
	}
}

// lookup returns a copy of the task id names for who, false when it is unknown,
// expired or another principal's (which the caller cannot tell apart).
func (t *taskTable) lookup(id string, who principal) (taskEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok || e.owner != who {
		return taskEntry{}, false
	}
	if time.Now().After(e.expires) {
		delete(t.byID, id)
		return taskEntry{}, false
	}
	return *e, true
}

// asked records the input request keys of the latest answer about task id.
func (t *taskTable) asked(id string, keys map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[id]; ok {
		e.asked = keys
	}
}

// size is the number of tasks remembered.
func (t *taskTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// taskState is what toolshed reads of a task handle or of a tasks/get result.
type taskState struct {
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	PollIntervalMs *int64                     `json:"pollIntervalMs"`
	TTLMs          *int64                     `json:"ttlMs"`
	Result         json.RawMessage            `json:"result"`
	Error          *jsonrpc.Error             `json:"error"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
}

func (s taskState) terminal() bool {
	return s.Status == "completed" || s.Status == "failed" || s.Status == "cancelled"
}

func (s taskState) pollInterval() time.Duration {
	if s.PollIntervalMs == nil {
		return defaultPollInterval
	}
	return min(max(time.Duration(*s.PollIntervalMs)*time.Millisecond, minPollInterval), time.Duration(pollIntervalCap.Load()))
}

// pollIntervalCap is maxPollInterval, which the tests of task notifications raise (a
// poll woken only by its timer then never ends in time).
var pollIntervalCap atomic.Int64

func init() { pollIntervalCap.Store(int64(maxPollInterval)) }

func (s taskState) ttl() time.Duration {
	if s.TTLMs == nil || *s.TTLMs <= 0 {
		return maxTaskTTL
	}
	return min(time.Duration(*s.TTLMs)*time.Millisecond, maxTaskTTL)
}

// withTaskID returns raw, a JSON object from an upstream (a task handle, a tasks/get
// result), with its taskId set to id, toolshed's id for the task: every other byte as
// the upstream wrote it.
func withTaskID(raw json.RawMessage, id string) json.RawMessage {
	quoted, _ := json.Marshal(id)
	return setMembers(raw, member{Key: "taskId", Value: quoted})
}

// isTaskResult reports whether raw, a tools/call result, is a task handle.
func isTaskResult(raw json.RawMessage) bool {
	v := memberValue(raw, "resultType")
	return len(v) > 0 && bytes.Equal(bytes.TrimSpace(v), []byte(`"task"`))
}

// declaresTasks reports whether a request's _meta declares the Tasks extension in its
// client capabilities (the envelope of MCP 2026-07-28).
func declaresTasks(meta mcp.Meta) bool {
	caps, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	raw, isRaw := caps.(json.RawMessage) // as fastMeta keeps the envelope
	if isRaw && !hasMemberFold(raw, "extensions") {
		return false // the common case, read without decoding
	}
	if !isRaw {
		var err error
		if raw, err = json.Marshal(caps); err != nil {
			return false
		}
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return false
	}
	v, ok := c.Extensions[tasksExtension]
	return ok && !isNull(v)
}

// tasksRequired is the error of a call or task request from a client that did not
// declare the Tasks extension, where it is needed: MissingRequiredClientCapability,
// naming the extension, as the extension says.
func tasksRequired(what string) *jsonrpc.Error {
	// Not mcp.MissingRequiredClientCapabilityData: its ClientCapabilities writes
	// "roots": {} when it has no roots, which would ask for roots too.
	data := []byte(`{"requiredCapabilities":{"extensions":{"` + tasksExtension + `":{}}}}`)
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: what + " needs the MCP Tasks extension: declare \"" + tasksExtension + "\" under clientCapabilities.extensions in the request's _meta"}
}

// requiresTask reports whether a tool's definition says it runs only as a task
// (execution.taskSupport "required").
func requiresTask(raw json.RawMessage) bool {
	exec := memberValue(raw, "execution")
	if len(exec) == 0 || exec[0] != '{' {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(memberValue(exec, "taskSupport")), []byte(`"required"`))
}

// checkTaskSupport refuses the call of a tool that runs only as a task from a client
// of MCP 2026-07-28 that did not declare the Tasks extension. Older clients know
// nothing of tasks: toolshed polls the task for them (see taskOutcome).
func checkTaskSupport(spec callSpec) error {
	if spec.tool == nil || !requiresTask(spec.tool.Raw) {
		return nil
	}
	meta := spec.req.Params.Meta
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	if !modernVersion(v) || declaresTasks(meta) {
		return nil
	}
	return tasksRequired("the tool " + spec.tool.Qualified)
}

// followsTasks reports whether toolshed can send tasks/* requests on l: on the
// connection it wraps (stdio, SSE, catalog), or, to a Streamable HTTP server of MCP
// 2026-07-28, which has no sessions, in POSTs of its own (see postTask).
func (l *link) followsTasks() bool { return l != nil && (l.conn != nil || l.modern()) }

// advertisesTasks reports whether the upstream of l declared the Tasks extension and
// toolshed can follow its tasks (see ErrTaskRequests): only then does toolshed declare
// the extension to it, and offer it to clients.
func (l *link) advertisesTasks() bool {
	if !l.followsTasks() || l.cs == nil {
		return false
	}
	res := l.cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return false
	}
	_, ok := res.Capabilities.Extensions[tasksExtension]
	return ok
}

// declareTasks returns the client capabilities of toolshed's envelope, caps, with the
// Tasks extension declared: toolshed takes task handles from every upstream that
// offers them, polling them itself for the clients that know nothing of tasks.
func declareTasks(caps any) any {
	raw, err := json.Marshal(caps)
	if err != nil || len(raw) == 0 || raw[0] != '{' {
		raw = []byte("{}")
	}
	ext := memberValue(raw, "extensions")
	if len(ext) == 0 || ext[0] != '{' {
		ext = []byte("{}")
	}
	ext = setMembers(ext, member{Key: tasksExtension, Value: []byte("{}")})
	return json.RawMessage(setMembers(raw, member{Key: "extensions", Value: ext}))
}

// tasksAdvertised reports whether an upstream of the gateway offers tasks.
func (g *Gateway) tasksAdvertised() bool {
	for _, u := range g.upstreams {
		if u.currentLink().advertisesTasks() {
			return true
		}
	}
	return false
}

// tasksCapability is a receiving middleware that adds the Tasks extension to the
// capabilities toolshed's server/discover offers while an upstream offers it.
func (g *Gateway) tasksCapability(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if dr, ok := res.(*mcp.DiscoverResult); ok && err == nil && g.tasksAdvertised() {
			caps := &mcp.ServerCapabilities{}
			if dr.Capabilities != nil {
				cp := *dr.Capabilities
				cp.Extensions = maps.Clone(cp.Extensions)
				caps = &cp
			}
			caps.AddExtension(tasksExtension, map[string]any{})
			dr.Capabilities = caps
		}
		return res, err
	}
}

// isTaskMethod reports whether a client's request is one of the extension's, which
// the connection answers itself (see serveTask).
func isTaskMethod(method string) bool {
	return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel"
}

// serveTask answers a client's tasks/get, tasks/update or tasks/cancel on session ss
// of profile: a request without the extension declared gets
// MissingRequiredClientCapability; an id that is unknown, expired or another
// principal's gets invalid params, as an unknown task does; otherwise the request goes
// to the task's upstream, about its own id, and its answer comes back with the
// client's id.
func (g *Gateway) serveTask(ctx context.Context, ss *mcp.ServerSession, req *jsonrpc.Request) *jsonrpc.Response {
	fail := func(err *jsonrpc.Error) *jsonrpc.Response { return &jsonrpc.Response{ID: req.ID, Error: err} }
	var p struct {
		Meta           mcp.Meta                   `json:"_meta"`
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: the params cannot be read (%v); send {\"taskId\": \"...\"}", req.Method, err)})
	}
	if !declaresTasks(p.Meta) {
		return fail(tasksRequired(req.Method))
	}
	if p.TaskID == "" {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": params.taskId is missing; send the taskId of the task handle the tool call returned"})
	}
	e, ok := g.tasks.lookup(p.TaskID, g.clients.principalOf(ss))
	if l := e.task.l; ok && l.conn != nil && e.task.u.currentLink() != l {
		// The server restarted (or toolshed reconnected it) since: the task ended
		// with its process, and its id may name another principal's task now.
		ok = false
	}
	if !ok {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown task %q (it has expired, or was never yours); call the tool again", req.Method, p.TaskID)})
	}
	var inputs map[string]json.RawMessage
	if req.Method == "tasks/update" {
		inputs = make(map[string]json.RawMessage, len(p.InputResponses))
		for k, v := range p.InputResponses {
			if e.asked[k] { // only answers to what the upstream asked
				inputs[k] = v
			}
		}
	}
	raw, err := e.task.request(ctx, req.Method, inputs, p.Meta)
	if err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return fail(wire)
	}
	if req.Method == "tasks/get" {
		var st taskState
		if json.Unmarshal(raw, &st) == nil {
			keys := make(map[string]bool, len(st.InputRequests))
			for k := range st.InputRequests {
				keys[k] = true
			}
			g.tasks.asked(p.TaskID, keys)
		}
	}
	if v := memberValue(raw, "taskId"); len(v) > 0 {
		raw = withTaskID(raw, p.TaskID)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.task.u.cfg.Name + " answered " + req.Method + " with a result that is not JSON"})
	}
	return &jsonrpc.Response{ID: req.ID, Result: buf.Bytes()}
}

// tryTask answers a client's tasks/* request on the connection (see serveTask), and
// reports whether it did; the SDK's server has no handler for them.
func (c *stdioConn) tryTask(req *jsonrpc.Request) bool {
	fs := c.fastCalls.Load()
	if fs == nil || !isTaskMethod(req.Method) {
		return false
	}
	c.mu.Lock()
	if _, busy := c.open[req.ID]; busy {
		c.mu.Unlock()
		return false // an id in flight: the SDK refuses it
	}
	c.open[req.ID] = false
	c.mu.Unlock()
	go func() { _ = c.writeFast(fs.g.serveTask(c.life, fs.ss, req)) }()
	return true
}

// taskServe returns what answers a client's tasks/* request of a POST (see
// serveTask), false when req is not one.
func (c *httpConn) taskServe(fs *fastSession, req *jsonrpc.Request) (func(), bool) {
	if !isTaskMethod(req.Method) || !req.IsCall() {
		return nil, false
	}
	return func() {
		resp := fs.g.serveTask(c.life, fs.ss, req)
		if data, err := encodeResponse(resp); err == nil {
			_ = c.write(context.Background(), resp, data)
		}
	}, true
}
