package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/oauth"
)

// What a call does with a task handle its upstream answered with (see tasks.go): hand
// it to the client under toolshed's id, or poll the task for a client that knows
// nothing of tasks; and the tasks/* requests toolshed sends upstream.

// watchTask has the task of a task handle that answers call c cancelled upstream when
// the call is, until taskOutcome takes it over: the client may cancel the call, or
// toolshed end it, as the handle arrives, and nothing would then ever poll or cancel
// the task. Any other outcome is out as it is. A cancel that comes before the handle
// does ends the upstream request itself (notifications/cancelled), and the handle that
// answers it anyway is not delivered: abandonedTask cancels its task.
func (r *callRegistry) watchTask(c *call, u *Upstream, out outcome) outcome {
	if out.err != nil || !isTaskResult(out.raw) {
		return out
	}
	var st taskState
	if json.Unmarshal(out.raw, &st) == nil && st.TaskID != "" {
		task := upTask{u: u, l: u.currentLink(), id: st.TaskID, user: u.callUser(c.principal)}
		out.unwatch = context.AfterFunc(c.upCtx, task.cancel)
	}
	return out
}

// abandonedTask cancels the task of raw, the result of a tools/call that came on l
// after toolshed had cancelled the call (the client cancelled it, its call_timeout
// passed, toolshed is stopping): a server may make the task as the cancel crosses its
// answer, or ignore the cancel, and its task would otherwise run, and be kept, until
// its ttlMs with nobody to follow it. Any other result is dropped, as before. It is
// called on the goroutine that reads l, so the tasks/cancel goes out on one of its own.
func (u *Upstream) abandonedTask(l *link, raw json.RawMessage) {
	if !isTaskResult(raw) {
		return
	}
	var st taskState
	if json.Unmarshal(raw, &st) != nil || st.TaskID == "" {
		return
	}
	go upTask{u: u, l: l, id: st.TaskID}.cancel()
}

// taskOutcome is the outcome of call c once its upstream answered: a task handle for a
// client that declared the extension, with the task's id replaced by the client's
// opaque one; for any other client, the task's own outcome, polled for. Any other
// outcome is out as it is.
func (r *callRegistry) taskOutcome(ctx context.Context, c *call, out outcome) outcome {
	if out.err != nil || !isTaskResult(out.raw) {
		return out
	}
	if out.unwatch != nil && !out.unwatch() {
		return outcome{err: context.Cause(c.upCtx)} // the call ended, and the task with it
	}
	var st taskState
	if err := json.Unmarshal(out.raw, &st); err != nil || st.TaskID == "" {
		return outcome{err: fmt.Errorf("%s answered tools/call with a task handle without a taskId: %.200s", c.server, out.raw)}
	}
	u := r.g.byName[c.server]
	if u == nil {
		return outcome{err: fmt.Errorf("%w: the server %s is not configured any more", ErrUnavailable, c.server)}
	}
	task := upTask{u: u, l: u.currentLink(), id: st.TaskID, user: u.callUser(c.principal)}
	if !task.l.followsTasks() {
		return outcome{err: fmt.Errorf("%s answered with a task: %w", c.server, ErrTaskRequests)}
	}
	if c.tasks {
		return outcome{raw: withTaskID(out.raw, r.g.tasks.record(c.server, task, c.principal, st.ttl()))}
	}
	return task.poll(ctx, c, st)
}

// poll waits for the task of call c (in state st) to end, for a client that knows
// nothing of tasks, and returns its outcome: its result, its error, or a cancellation.
// It asks the client for the input the task needs on the call's session. The client
// cancelling the call, toolshed stopping or the call_timeout passing cancel the task
// upstream. A status notification of the task, where the upstream sends them, ends the
// wait for the next poll early.
func (t upTask) poll(ctx context.Context, c *call, st taskState) outcome {
	u := t.u
	timeout := u.callTimeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	rounds, polls := 0, 0
	// A status notification of the task asks for its state at once (see listen).
	listenCtx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	wake := t.listen(listenCtx, c)
	// answered holds the input request keys answered already: a task may still report
	// them until it has taken the answers, and the client is asked each once.
	answered := map[string]bool{}
	for !st.terminal() {
		asks := map[string]json.RawMessage{}
		for k, v := range st.InputRequests {
			if !answered[k] {
				asks[k] = v
			}
		}
		if st.Status == "input_required" && len(asks) > 0 {
			if rounds++; rounds > maxTaskInputRounds {
				t.cancel()
				return outcome{err: fmt.Errorf("%s: the task asked for input more than %d times; it was cancelled", u.cfg.Name, maxTaskInputRounds)}
			}
			for k := range asks {
				answered[k] = true
			}
			// As wait asks: the call ending (toolshed stopping, the session going)
			// stops waiting for a client that may never answer.
			askCtx, stopAsking := context.WithCancel(ctx)
			unhook := context.AfterFunc(c.upCtx, stopAsking)
			answers, err := askTaskInputs(askCtx, c.session, asks)
			unhook()
			stopAsking()
			if err != nil {
				t.cancel()
				return outcome{err: err}
			}
			if _, err := t.request(ctx, "tasks/update", answers, c.clientMeta); err != nil {
				t.cancel()
				return outcome{err: err}
			}
		}
		wait := time.NewTimer(st.pollInterval())
		select {
		case <-ctx.Done():
			wait.Stop()
			t.cancel()
			return outcome{err: context.Cause(ctx)}
		case <-c.upCtx.Done():
			wait.Stop()
			t.cancel()
			return outcome{err: context.Cause(c.upCtx)}
		case <-deadline.C:
			wait.Stop()
			t.cancel()
			return outcome{err: fmt.Errorf("%w: the task of %s did not end within %v (call_timeout); it was cancelled", ErrTimeout, u.cfg.Name, timeout)}
		case <-wait.C:
		case <-wake:
			wait.Stop()
		}
		raw, err := t.request(ctx, "tasks/get", nil, c.clientMeta)
		if err != nil {
			t.cancel()
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return outcome{err: err}
		}
		st = taskState{}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.cancel()
			return outcome{err: fmt.Errorf("%s answered tasks/get with a result toolshed cannot read: %v", u.cfg.Name, err)}
		}
		polls++
		u.g.calls.taskProgress(c, polls, st)
	}
	switch {
	case st.Status == "completed" && len(st.Result) > 0 && st.Result[0] == '{':
		return outcome{raw: st.Result}
	case st.Status == "failed" && st.Error != nil:
		return outcome{err: st.Error}
	case st.Status == "cancelled":
		return outcome{err: fmt.Errorf("%w: %s cancelled the task", context.Canceled, u.cfg.Name)}
	}
	return outcome{err: fmt.Errorf("%s ended the task with status %q and no result", u.cfg.Name, st.Status)}
}

// taskProgress tells the client of call c, when it asked for progress, how its task
// goes (its status message, else its status) after the n-th poll.
func (r *callRegistry) taskProgress(c *call, n int, st taskState) {
	if c.downToken == nil || c.session == nil {
		return
	}
	msg := st.StatusMessage
	if msg == "" {
		msg = "the task is " + strings.ReplaceAll(st.Status, "_", " ")
	}
	r.mu.Lock() // as note requires
	defer r.mu.Unlock()
	c.note(func() {
		_ = c.session.NotifyProgress(c.context(), &mcp.ProgressNotificationParams{ProgressToken: c.downToken, Progress: float64(n), Message: msg})
	})
}

// askTaskInputs asks the client of session ss for the input a task needs, each
// request as the elicitation or sampling request it is, and returns the answers by key.
func askTaskInputs(ctx context.Context, ss *mcp.ServerSession, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	answers := make(map[string]json.RawMessage, len(requests))
	for key, raw := range requests {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("the task's input request %q cannot be read: %v", key, err)
		}
		var params mcp.InputRequest
		switch req.Method {
		case "elicitation/create":
			params = &mcp.ElicitParams{}
		case "sampling/createMessage":
			params = &mcp.CreateMessageParams{}
		default:
			return nil, fmt.Errorf("the task asks for input toolshed cannot relay (%q)", req.Method)
		}
		if err := json.Unmarshal(req.Params, params); err != nil {
			return nil, fmt.Errorf("the task's input request %q cannot be read: %v", key, err)
		}
		if ss == nil {
			return nil, errors.New("the task asks for the client's input, and the call has no session to ask on")
		}
		res, err := askClient(ctx, ss, params)
		if err != nil {
			return nil, err
		}
		if answers[key], err = marshal(res); err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// cancel tells the upstream to cancel the task, not waiting long for its answer: it
// is sent when the call it served has ended.
func (t upTask) cancel() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = t.request(ctx, "tasks/cancel", nil, nil)
}

// taskParams are the params of a tasks/* request toolshed sends upstream.
type taskParams struct {
	Meta           mcp.Meta                   `json:"_meta,omitempty"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// request sends a tasks/* request about the task, on the connection that started it,
// with toolshed's envelope and the client's other _meta keys (its trace context:
// traceparent, tracestate, baggage) from client, and returns its result as the server
// wrote it. It is bounded by the server's call_timeout.
func (t upTask) request(ctx context.Context, method string, inputs map[string]json.RawMessage, client mcp.Meta) (json.RawMessage, error) {
	u, l, id := t.u, t.l, t.id
	if l == nil {
		return nil, u.unavailable()
	}
	if !l.followsTasks() {
		return nil, fmt.Errorf("%s: %w", u.cfg.Name, ErrTaskRequests)
	}
	meta := l.callMeta(withoutProgress(client), l.support)
	if meta == nil {
		meta = mcp.Meta{}
	}
	if l.conn == nil {
		// What the SDK's client stamps on its own requests.
		meta[mcp.MetaKeyProtocolVersion] = l.version
		meta[mcp.MetaKeyClientInfo] = toolshedClient
	}
	params, err := marshal(taskParams{Meta: meta, TaskID: id, InputResponses: inputs})
	if err != nil {
		return nil, err
	}
	l.busy.Add(1)
	defer l.busy.Add(-1)
	ctx, cancel := context.WithTimeoutCause(ctx, u.callTimeout(), ErrTimeout)
	defer cancel()
	if t.user != "" {
		ctx = oauth.WithUser(ctx, t.user)
	}
	if l.conn == nil {
		return u.postTask(ctx, l, method, id, params)
	}
	type answer struct {
		raw json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	l.conn.start(ctx, method, params, func(raw json.RawMessage, err error) { done <- answer{raw, err} })
	a := <-done
	if a.err != nil {
		var wire *jsonrpc.Error
		if errors.As(a.err, &wire) {
			return nil, wire
		}
		return nil, fmt.Errorf("%w: %s did not answer %s (%v)", ErrUnavailable, u.cfg.Name, method, a.err)
	}
	return a.raw, nil
}

// maxTaskAnswer bounds a Streamable HTTP server's answer to a tasks/* request.
const maxTaskAnswer = 16 << 20

// taskRequestID is the JSON-RPC id of the tasks/* requests postTask sends, each in a
// POST of its own.
const taskRequestID = "toolshed-task"

// postTask sends a tasks/* request to a Streamable HTTP server of MCP 2026-07-28 in a
// POST of its own, with the headers that protocol requires (the version, Mcp-Method,
// and Mcp-Name carrying the task id) and the ones configured for the server, and
// returns its result as the server wrote it.
func (u *Upstream) postTask(ctx context.Context, l *link, method, id string, params json.RawMessage) (json.RawMessage, error) {
	for _, r := range id {
		if r < 0x20 || r > 0x7e {
			return nil, fmt.Errorf("%s: the task id %q cannot travel in an Mcp-Name header", u.cfg.Name, id)
		}
	}
	body, err := marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", taskRequestID, method, params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", l.version)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", id)
	client := &http.Client{Transport: &captureRoundTripper{base: u.httpBase(), headers: u.cfg.Headers}}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("%w: %s did not answer %s (%v)", ErrUnavailable, u.cfg.Name, method, err)
	}
	defer resp.Body.Close()
	// The answer is a JSON body or an event of a stream, as for the SDK's requests.
	var answer []byte
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	msgs := &messageBody{ReadCloser: io.NopCloser(io.LimitReader(resp.Body, maxTaskAnswer)), sse: mediaType == "text/event-stream",
		deliver: func(msg []byte) {
			if answer == nil && string(bytes.TrimSpace(memberValue(msg, "id"))) == `"`+taskRequestID+`"` {
				answer = append([]byte(nil), msg...)
			}
		}}
	_, _ = io.Copy(io.Discard, msgs)
	if answer == nil {
		return nil, fmt.Errorf("%s answered %s with HTTP %d and no JSON-RPC answer", u.cfg.Name, method, resp.StatusCode)
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		return nil, fmt.Errorf("%s answered %s with a message toolshed cannot read: %v", u.cfg.Name, method, err)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	if len(m.Result) == 0 {
		return nil, fmt.Errorf("%s answered %s with neither a result nor an error", u.cfg.Name, method)
	}
	return m.Result, nil
}

// withoutProgress is a client's _meta without its progress token, which names the
// client's request, not toolshed's.
func withoutProgress(m mcp.Meta) mcp.Meta {
	if _, ok := m["progressToken"]; !ok {
		return m
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		if k != "progressToken" {
			out[k] = v
		}
	}
	return out
}
