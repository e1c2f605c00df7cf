package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/search"
)

// Error codes of gateway results beyond search's four: a call refused by the hooks or by
// the user, and an error the upstream server itself returned.
const (
	PermissionDenied search.Code = "permission_denied"
	ToolError        search.Code = "tool_error"
	// InputNotRelayed: the server asked for the client's input through MRTR in a way
	// toolshed could not relay (see ErrInputNotRelayed).
	InputNotRelayed search.Code = "input_not_relayed"
)

// approvalInput is the input request id toolshed uses to ask for approval.
const approvalInput = "toolshed-approval"

// pendingTimeout is how long a call suspended for the client's input (multi round-trip)
// waits for the client to come back before it is cancelled.
const pendingTimeout = 10 * time.Minute

// callRegistry tracks the calls in flight: to route progress notifications and the
// upstreams' sampling and elicitation requests back to the client whose call caused
// them, and to resume calls suspended for the client's input.
type callRegistry struct {
	g        *Gateway
	mu       sync.Mutex
	seq      uint64
	byToken  map[string]*call   // upstream progress token -> call
	inflight map[string][]*call // server -> its calls in flight, oldest first
	pending  map[string]*call   // requestState (see newRequestState) -> call suspended for input
	// approvals holds the approval questions asked and not yet answered (see approval.go).
	approvals approvals
	// suspended counts the calls in pending by principal (see maxSuspended).
	suspended map[principal]int
	// used holds, per server, when each principal's last call on it ended: a server may
	// send a request about a call after answering it (see cause).
	used map[string]map[principal]time.Time
	// gone holds the sessions whose client went away with calls in flight (see
	// sessionGone): a call of one that registers afterwards is cancelled at once.
	gone map[*mcp.ServerSession]bool
}

func newCallRegistry(g *Gateway) *callRegistry {
	return &callRegistry{g: g, byToken: map[string]*call{}, inflight: map[string][]*call{}, pending: map[string]*call{}, suspended: map[principal]int{}, used: map[string]map[principal]time.Time{}, gone: map[*mcp.ServerSession]bool{}}
}

// call is one call of a real tool in flight.
type call struct {
	// ctx is the context of the client's request being served, while one is: over
	// Streamable HTTP, notifications sent with it travel on that request's own stream,
	// ahead of its result.
	ctxMu sync.Mutex
	ctx   context.Context

	id        string
	server    string
	tool      string // qualified name, which a retry's requestState is bound to
	u         *Upstream
	name      string          // the tool's name at its server
	args      json.RawMessage // as sent upstream, again with each retry
	meta      mcp.Meta        // likewise (the client's trace context, the progress token)
	caller    clientSupport   // what the client supports, which a modern upstream is told
	session   *mcp.ServerSession
	principal principal // the session's, as the call starts (see cause, newRequestState)
	downToken any       // the client's progress token, nil if it sent none
	upToken   string    // the token toolshed sent upstream
	mrtr      bool      // the client speaks multi round-trip requests (protocol >= 2026-07-28)
	tasks     bool      // the client declared the Tasks extension for the call (see tasks.go)
	// clientMeta is the _meta of the client's call: its trace context goes with the
	// requests about the call's task (see taskpoll.go).
	clientMeta mcp.Meta

	inputs chan *relayRequest
	done   chan outcome
	// ended is closed when the call is unregistered (see end): an upstream request
	// that was attached to it and not taken yet goes to its session directly.
	ended     chan struct{}
	endedOnce sync.Once
	// notes carries the notifications about the call to its client (progress, log
	// messages), in order, to a goroutine of the call's own (see deliverNotes): the
	// upstream's reading goroutine only queues them, so that a client that reads
	// slowly holds up no other client's calls on that upstream. The call's result
	// waits until its notes are written. Made by the first note (under the
	// registry's mu), nil for a call that has none.
	notes     chan func()
	notesDone chan struct{}
	// upCtx is the upstream call's context, which cancel ends (with why: nil for
	// the client cancelling, errStopping for the gateway stopping).
	upCtx   context.Context
	cancel  context.CancelCauseFunc
	waiting map[string]*relayRequest // input id -> relay awaiting the client's answer
	expiry  *time.Timer
	// state is the requestState the call is suspended under, if it is (see suspend).
	state string
	// need is what the upstream asked for while a modern client is asked it, and
	// rounds how many times it asked for this call (see needInput). Both belong to
	// the goroutine serving the call's current request.
	need   *inputNeed
	rounds int
}

// outcome is how an upstream call ended: the server's result, as the JSON it sent, or
// an error.
type outcome struct {
	raw json.RawMessage
	err error
	// unwatch, for a task handle, stops cancelling the task when the call is (see
	// watchTask).
	unwatch func() bool
}

// relayRequest is an upstream's sampling or elicitation request on its way to a client.
type relayRequest struct {
	id     string
	params mcp.InputRequest
	reply  chan relayReply
}

type relayReply struct {
	res mcp.InputResponse
	err error
}

// callSpec is a call of a real tool, as the client asked for it.
type callSpec struct {
	req     *mcp.CallToolRequest
	profile string
	tool    *catalog.Tool
	args    json.RawMessage
	via     string // "direct" or "tool_call"
	// checked reports that args were already decoded and validated (tool_call does it
	// while resolving the tool).
	checked bool
}

// run calls a real tool for a client: hooks, argument validation, approval, then the
// upstream, relaying progress and the upstream's requests for the client's input.
func (r *callRegistry) run(ctx context.Context, spec callSpec) (*mcp.CallToolResult, error) {
	start := time.Now()
	entry := activity{Time: start.UTC(), Session: r.g.clients.tagOf(spec.req.Session), Profile: spec.profile, Subject: r.g.subjectOf(spec.req.Session), Tool: spec.tool.Qualified, Server: spec.tool.Server, Via: spec.via}
	finish := func(res *mcp.CallToolResult, outcome string) (*mcp.CallToolResult, error) {
		entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		entry.Outcome = outcome
		entry.Arguments = spec.args
		r.g.hooks.log(entry)
		r.g.rec.call(entry, spec.tool, res, time.Since(start))
		return res, nil
	}
	if state := spec.req.Params.RequestState; state != "" && !isApprovalState(state) && !isSignInState(state) {
		return r.resume(ctx, spec, finish)
	}
	if !r.g.limits.allow(r.g.clients.rateKey(spec.req.Session)) {
		return finish(errorResult(search.TooManyRequests, "this session is over its rate limit of %s; slow down and retry in a few seconds", r.g.limits.describe()), "rate_limited")
	}
	if why := r.g.hooks.denied(spec.tool); why != "" {
		return finish(errorResult(PermissionDenied, "calling %s is not allowed here (%s); use another tool or ask the operator", spec.tool.Qualified, why), "denied")
	}
	if !spec.checked {
		args, err := bridge.CheckArguments(spec.tool, spec.args)
		if err != nil {
			return finish(errorResult(search.InvalidToolInput, "%v", err), "invalid_arguments")
		}
		spec.args = args
	}
	if err := checkTaskSupport(spec); err != nil {
		return nil, err // before asking the user to approve a call that cannot run
	}
	if u := r.g.byName[spec.tool.Server]; u != nil {
		var res *mcp.CallToolResult
		var err error
		var ok bool
		if spec, res, err, ok = r.needsSignIn(ctx, spec, u, finish); ok {
			return res, err // before the approval: the call cannot run yet
		}
	}
	if r.g.hooks.needsApproval(spec.tool) {
		// Not for a call that cannot run: the user would approve it for nothing.
		if u := r.g.byName[spec.tool.Server]; u != nil && u.currentLink() == nil {
			res, tag := mapOutcome(ctx, outcome{err: u.unavailable()})
			return finish(res, tag)
		}
		res, approved := r.approval(ctx, spec)
		if res == nil && !approved {
			return refuseState(finish, errApprovalNotAsked(spec.tool.Qualified))
		}
		if !approved {
			if res.InputRequests != nil {
				return res, nil // asking the user; the call comes back with the answer
			}
			return finish(res, "declined")
		}
	}
	u := r.g.byName[spec.tool.Server]
	if u == nil {
		return finish(errorResult(search.Unavailable, "the server of %s is not configured any more; search again for the tool", spec.tool.Qualified), "unavailable")
	}

	c := r.start(ctx, spec, u)
	return r.wait(ctx, c, finish)
}

// start registers a call and sends it upstream.
func (r *callRegistry) start(ctx context.Context, spec callSpec, u *Upstream) *call {
	who := r.g.clients.principalOf(spec.req.Session)
	// The upstream call outlives this handler when the client is asked for input over
	// multi round-trip requests, so it runs on a context of its own, cancelled
	// explicitly. Made before the call is registered: what cancels the calls in flight
	// (cancelFor: a DELETE, the gateway stopping) finds them by the registry, and would
	// otherwise read cancel unset (a nil function) or racing with its write.
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.mu.Lock()
	r.seq++
	c := &call{
		id:         "toolshed-" + strconv.FormatUint(r.seq, 36) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		server:     u.cfg.Name,
		tool:       spec.tool.Qualified,
		u:          u,
		name:       spec.tool.Name,
		args:       spec.args,
		caller:     r.callerSupport(spec.req),
		session:    spec.req.Session,
		principal:  who,
		mrtr:       speaksMRTR(spec.req),
		tasks:      declaresTasks(spec.req.Params.Meta),
		clientMeta: spec.req.Params.Meta,
		inputs:     make(chan *relayRequest),
		ended:      make(chan struct{}),
		notesDone:  make(chan struct{}),
		done:       make(chan outcome, 1),
		waiting:    map[string]*relayRequest{},
		ctx:        ctx,
		upCtx:      callCtx,
		cancel:     cancel,
	}
	// The client's _meta without its envelope, which is the client's own and never
	// goes upstream (see callMeta): an old upstream then gets this map as it is.
	meta := mcp.Meta{}
	for k, v := range spec.req.Params.Meta {
		if !strings.HasPrefix(k, envelopePrefix) {
			meta[k] = v
		}
	}
	if tok := spec.req.Params.GetProgressToken(); tok != nil {
		c.downToken, c.upToken = tok, c.id
		meta["progressToken"] = c.upToken
		r.byToken[c.upToken] = c
	}
	if len(meta) == 0 {
		meta = nil
	}
	c.meta = meta
	r.inflight[c.server] = append(r.inflight[c.server], c)
	gone := r.gone[c.session]
	r.mu.Unlock()
	if gone {
		cancel(nil) // its client went away before it registered (see sessionGone)
	}

	r.send(c, offered(spec.req.Params.InputResponses))
	return c
}

// offered is what a call brings its server of answers to questions not asked yet: MCP
// 2026-07-28 lets a client send inputResponses with a first call (a server that needs no
// state of its own may take them, and should ignore what it does not know), and they are
// the calling client's own, for the server it calls. toolshed's approval answer is
// toolshed's, and stays.
func offered(responses mcp.InputResponseMap) *callRetry {
	if len(responses) == 0 {
		return nil
	}
	out := make(mcp.InputResponseMap, len(responses))
	for k, v := range responses {
		if k != approvalInput {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &callRetry{responses: out}
}

// send sends c upstream: the call itself, or its retry with the client's answers to
// what the upstream asked.
func (r *callRegistry) send(c *call, retry *callRetry) {
	c.u.startCall(c.upCtx, upstreamCall{name: c.name, args: c.args, meta: c.meta, caller: c.caller, retry: retry, user: c.u.callUser(c.principal)}, func(raw json.RawMessage, err error) {
		c.done <- r.watchTask(c, c.u, outcome{raw: raw, err: err})
	})
}

// wait waits for a call's outcome, relaying the upstream's requests for input.
func (r *callRegistry) wait(ctx context.Context, c *call, finish func(*mcp.CallToolResult, string) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	c.setContext(ctx)
	defer c.setContext(context.Background())
	cancelled := func() (*mcp.CallToolResult, error) {
		c.cancel(nil)
		r.end(c)
		_, _ = finish(nil, "cancelled")
		return nil, ctx.Err()
	}
	for {
		select {
		case out := <-c.done:
			out = r.taskOutcome(ctx, c, out) // a task handle: the client's, or polled for
			if out.err == nil && needsInput(out.raw) {
				res, retry, err := r.needInput(ctx, c, out.raw)
				switch {
				case res != nil:
					return res, nil // a modern client is asked; the call comes back with the answers
				case err == nil:
					r.send(c, retry)
					continue
				case ctx.Err() != nil:
					return cancelled()
				case c.upCtx.Err() != nil:
					err = context.Cause(c.upCtx) // the gateway stopping, the session ending
				}
				out = outcome{err: err}
			}
			r.end(c)
			c.notesWritten(ctx)
			res, tag := mapOutcome(ctx, out)
			return finish(res, tag)
		case rr := <-c.inputs:
			if !c.mrtr {
				// Asked on the call's own request: cancelling the call (the gateway
				// stopping, the session ending) stops waiting for a client that may
				// never answer, and the call's outcome follows.
				askCtx, stopAsking := context.WithCancel(ctx)
				unhook := context.AfterFunc(c.upCtx, stopAsking)
				resp, err := askClient(askCtx, c.session, rr.params)
				unhook()
				stopAsking()
				rr.reply <- relayReply{resp, err}
				continue
			}
			// Suspend: hand the request to the client, keep the upstream call going,
			// and resume when the client retries with the answer.
			res, err := r.suspend(c, mcp.InputRequestMap{rr.id: rr.params})
			if err != nil {
				rr.reply <- relayReply{err: err}
				continue
			}
			r.mu.Lock()
			c.waiting[rr.id] = rr
			r.mu.Unlock()
			return res, nil
		case <-ctx.Done():
			return cancelled()
		}
	}
}

// resume continues a call suspended for input, with the client's answers. The retry
// must carry the requestState the call was suspended under, once, from the principal
// that made the call and for the same tool (see newRequestState); anything else is
// refused as a call that ended, and nothing reaches the upstream.
func (r *callRegistry) resume(ctx context.Context, spec callSpec, finish func(*mcp.CallToolResult, string) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	state := spec.req.Params.RequestState
	who := r.g.clients.principalOf(spec.req.Session)
	r.mu.Lock()
	c, ok := r.pending[state]
	if ok = ok && checkRequestState(state, who, spec.tool.Qualified); ok {
		r.unsuspend(c)
		c.expiry.Stop()
	}
	r.mu.Unlock()
	if !ok {
		return refuseState(finish, fmt.Sprintf("the call this retry continues has ended or expired; call %s again", spec.tool.Qualified))
	}
	if need := c.need; need != nil {
		c.need = nil
		r.send(c, &callRetry{responses: need.answers(spec.req.Params.InputResponses), state: need.state})
		return r.wait(ctx, c, finish)
	}
	for id, resp := range spec.req.Params.InputResponses {
		if rr, ok := c.waiting[id]; ok {
			delete(c.waiting, id)
			rr.reply <- relayReply{res: resp}
		}
	}
	for id, rr := range c.waiting { // questions the client did not answer
		delete(c.waiting, id)
		rr.reply <- relayReply{err: errors.New("the client did not answer")}
	}
	return r.wait(ctx, c, finish)
}

// expire cancels a call whose client never came back with the input it was asked for.
func (r *callRegistry) expire(c *call) {
	r.mu.Lock()
	ok := c.state != "" && r.pending[c.state] == c
	if ok {
		r.unsuspend(c)
	}
	r.mu.Unlock()
	if ok {
		c.cancel(nil)
		for _, rr := range c.waiting {
			rr.reply <- relayReply{err: errors.New("the client did not answer in time")}
		}
		r.end(c)
	}
}

// end unregisters a call.
func (r *callRegistry) end(c *call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Under r.mu, where notes are queued (see note).
	c.endedOnce.Do(func() {
		close(c.ended)
		if c.notes != nil {
			close(c.notes) // deliverNotes closes notesDone when they are written
		} else {
			close(c.notesDone)
		}
	})
	if c.upToken != "" {
		delete(r.byToken, c.upToken)
	}
	calls := r.inflight[c.server]
	for i, x := range calls {
		if x == c {
			r.inflight[c.server] = append(calls[:i:i], calls[i+1:]...)
			break
		}
	}
	if len(r.inflight[c.server]) == 0 {
		delete(r.inflight, c.server)
	}
	if c.session != nil {
		m := r.used[c.server]
		if m == nil {
			m = map[principal]time.Time{}
			r.used[c.server] = m
		}
		m[c.principal] = time.Now()
	}
}

func (c *call) setContext(ctx context.Context) {
	c.ctxMu.Lock()
	c.ctx = ctx
	c.ctxMu.Unlock()
}

// context returns the context to send the client notifications about the call with.
func (c *call) context() context.Context {
	c.ctxMu.Lock()
	defer c.ctxMu.Unlock()
	return c.ctx
}

// progress relays an upstream's progress notification to the client that made the call.
func (r *callRegistry) progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	tok, _ := p.ProgressToken.(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.byToken[tok]; c != nil {
		c.note(func() {
			_ = c.session.NotifyProgress(c.context(), &mcp.ProgressNotificationParams{ProgressToken: c.downToken, Progress: p.Progress, Total: p.Total, Message: p.Message})
		})
	}
}

// noteQueue bounds the notifications about one call waiting for its client.
const noteQueue = 256

// note queues f, which writes a notification about c to its client; r.mu is held, so
// that c has not ended. A note that does not fit is dropped: progress and log messages
// are advisory, and a client that does not read them must not hold up the upstream.
func (c *call) note(f func()) {
	if c.notes == nil {
		// Most calls have none: the queue and its goroutine start with the first.
		c.notes = make(chan func(), noteQueue)
		go c.deliverNotes()
	}
	select {
	case c.notes <- f:
	default:
	}
}

// deliverNotes writes c's notifications to its client, in order, until c ends.
func (c *call) deliverNotes() {
	defer close(c.notesDone)
	for f := range c.notes {
		f()
	}
}

// notesWritten waits until the notifications about c are written, or ctx ends: a
// result must not overtake them.
func (c *call) notesWritten(ctx context.Context) {
	select {
	case <-c.notesDone:
	case <-ctx.Done():
	}
}

// relay passes an upstream's sampling, elicitation or roots/list request to the client
// it is for (see cause) and returns the client's answer: as part of the call that caused
// it, when a tool call did.
func (r *callRegistry) relay(ctx context.Context, server string, params mcp.InputRequest) (mcp.InputResponse, error) {
	c, ss, err := r.cause(server)
	if err != nil {
		return nil, err
	}
	if r.g.clients.isStateless(ss) && (c == nil || !c.mrtr) {
		// Its client cannot answer: the request would fail the session's connection. A
		// 2026-07-28 client's POST is stateless too, but is asked in its call's result.
		return nil, errStateless
	}
	r.g.rememberElicitation(server, params, ss)
	ctx, cancel := r.g.relayContext(ctx, server, c == nil)
	defer cancel()
	// askSession asks the client on its session, not on the stream of a call.
	askSession := func() (mcp.InputResponse, error) {
		res, err := askClient(ctx, ss, params)
		if err != nil {
			return nil, err
		}
		return convertResponse(params, res)
	}
	if c == nil {
		return askSession()
	}
	r.mu.Lock()
	r.seq++
	id := "toolshed-relay-" + strconv.FormatUint(r.seq, 36)
	r.mu.Unlock()
	rr := &relayRequest{id: id, params: params, reply: make(chan relayReply, 1)}
	select {
	case c.inputs <- rr:
	case <-c.ended:
		// The call's result came first: its client is still the one to ask.
		return askSession()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(pendingTimeout):
		return nil, errors.New("the call this request belongs to is no longer waiting")
	}
	select {
	case rep := <-rr.reply:
		if rep.err != nil {
			return nil, rep.err
		}
		return convertResponse(params, rep.res)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// mapOutcome turns an upstream call's outcome into the client's result and an activity
// log outcome. The server's own result goes to the client as the server wrote it (see
// forwardResult).
func mapOutcome(ctx context.Context, out outcome) (*mcp.CallToolResult, string) {
	switch {
	case out.err == nil && out.raw != nil:
		if resultIsError(out.raw) {
			return forwardResult(ctx, out.raw), "error"
		}
		return forwardResult(ctx, out.raw), "ok"
	case errors.Is(out.err, ErrTimeout):
		return errorResult(search.ExecutionTimeExceeded, "%v; the call was cancelled. Retry with backoff, or with a smaller request", out.err), "timeout"
	case errors.As(out.err, new(*oauth.SignInError)):
		return errorResult(search.Unavailable, "%v", out.err), "unavailable"
	case errors.Is(out.err, ErrUnavailable):
		return errorResult(search.Unavailable, "%v; toolshed restarts it automatically, retry with backoff in a few seconds", out.err), "unavailable"
	case errors.Is(out.err, errStopping):
		return errorResult(search.Unavailable, "the call was cancelled because toolshed is shutting down and the call was still running when its drain time (--drain-timeout) ran out; the server was told. Retry it in a few seconds, once toolshed (or, behind a load balancer, another replica) serves again"), "cancelled"
	case errors.Is(out.err, context.Canceled):
		return errorResult(search.Unavailable, "the call was cancelled"), "cancelled"
	case errors.Is(out.err, ErrInputNotRelayed):
		return errorResult(InputNotRelayed, "%v; the call ended without a result. Retry it, or use a tool that needs no input", out.err), "tool_error"
	}
	var je *jsonrpc.Error
	if errors.As(out.err, &je) && je.Code == mcp.CodeMissingRequiredClientCapabilities {
		missingCapability(ctx, je)
	}
	if errors.As(out.err, &je) && je.Code == jsonrpc.CodeInvalidParams {
		return errorResult(search.InvalidToolInput, "the server rejected the call: %s; fix the arguments and retry", je.Message), "invalid_arguments"
	}
	return errorResult(ToolError, "the server answered with an error: %v", out.err), "tool_error"
}

// errorResult is a tool result that reports an error to the model: the message as text,
// and {"error": code, "message": text} as structured content.
func errorResult(code search.Code, format string, args ...any) *mcp.CallToolResult {
	return fromBridge(bridge.ErrorResult(code, format, args...))
}

// fromBridge renders a bridge result as an MCP tool result.
func fromBridge(r bridge.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text}}, StructuredContent: r.Structured, IsError: r.IsError}
}

// canElicit reports whether the caller of req can be asked for input through
// elicitation: it declared so, in its own envelope or at its session's initialize.
func canElicit(req mcp.Request) bool {
	c := callerOf(req)
	return c.caps != nil && c.caps.Elicitation != nil
}

// speaksMRTR reports whether the caller of req is asked for input by a result of
// resultType input_required (multi round-trip requests) rather than by a request.
func speaksMRTR(req mcp.Request) bool { return callerOf(req).modern }
