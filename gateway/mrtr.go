package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (MRTR) across the bridge. A modern upstream asks for the
// client's input by answering a call with resultType "input_required": its
// inputRequests (elicitation, sampling, roots/list) and a requestState to echo back.
// The registry, not the SDK, handles that answer (the SDK's client middleware is
// disabled on upstream links): the question goes to the client that made the call, in
// the form it understands (its own session's requests for an old client, an
// input_required result of its own for a modern one), and the answers go back to the
// upstream as a retry of the call, with the upstream's requestState. The upstream's
// state never leaves the registry: a modern client gets toolshed's own (see
// newRequestState), which binds the retry to the call, its principal and its tool.
// Asking a client directly (askClient), for these and for an older upstream's own
// requests (see callRegistry.relay), is here too.

// maxInputRounds bounds the rounds of input one call may ask for, as the SDK's client
// does: a server that never stops asking ends the call rather than looping.
const maxInputRounds = 10

// maxUpstreamState bounds the requestState an upstream may ask toolshed to hold for a
// call suspended for input: toolshed keeps it in memory until the client answers.
const maxUpstreamState = 64 << 10

// inputNeed is what an upstream asked for in an input_required result: the questions,
// by the upstream's keys, and the state to send back with the answers.
type inputNeed struct {
	requests mcp.InputRequestMap
	state    string
}

// callRetry is a call's retry with the client's answers to an inputNeed.
type callRetry struct {
	responses mcp.InputResponseMap
	state     string
}

// parseInputNeed reads an upstream's input_required result. A result toolshed cannot
// relay is an error wrapping ErrInputNotRelayed that says why.
func parseInputNeed(server string, raw json.RawMessage) (*inputNeed, error) {
	var r struct {
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  *string         `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: its input_required result cannot be read (%v)", server, ErrInputNotRelayed, err)
	}
	need := &inputNeed{}
	if r.RequestState != nil {
		need.state = *r.RequestState
	}
	if len(need.state) > maxUpstreamState {
		return nil, fmt.Errorf("%s: %w: its requestState is %d bytes, more than the %d toolshed holds for a call; the server should keep its state itself", server, ErrInputNotRelayed, len(need.state), maxUpstreamState)
	}
	var requests map[string]json.RawMessage
	if err := json.Unmarshal(orNull(r.InputRequests), &requests); err != nil {
		return nil, fmt.Errorf("%s: %w: its inputRequests cannot be read (%v)", server, ErrInputNotRelayed, err)
	}
	need.requests = make(mcp.InputRequestMap, len(requests))
	for key, raw := range requests {
		req, err := readInputRequest(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: its input request %q %v", server, ErrInputNotRelayed, key, err)
		}
		need.requests[key] = req
	}
	if len(need.requests) == 0 {
		return nil, fmt.Errorf("%s: %w: it asked for no input (a server too busy to answer); retry the call later", server, ErrInputNotRelayed)
	}
	return need, nil
}

// readInputRequest reads one of an input_required result's inputRequests. The SDK's
// own decoding (mcp.InputRequestMap) panics on a null request, which an upstream must
// not be able to cause.
func readInputRequest(raw json.RawMessage) (mcp.InputRequest, error) {
	var w struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("cannot be read (%v)", err)
	}
	var req mcp.InputRequest
	switch w.Method {
	case "elicitation/create":
		req = &mcp.ElicitParams{}
	case "sampling/createMessage":
		req = &mcp.CreateMessageWithToolsParams{} // as the SDK reads it: a superset of the 2025 request
	case "roots/list":
		req = &mcp.ListRootsParams{}
	default:
		return nil, fmt.Errorf("asks for %q, where toolshed relays elicitation/create, sampling/createMessage and roots/list", w.Method)
	}
	if err := json.Unmarshal(orNull(w.Params), req); err != nil {
		return nil, fmt.Errorf("has params that cannot be read (%v)", err)
	}
	return req, nil
}

// orNull is raw, or JSON null when raw is empty (a member that is absent).
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// answers keeps the client's responses to what need asked, and drops any other key: a
// client answers only the questions it was asked.
func (need *inputNeed) answers(responses mcp.InputResponseMap) mcp.InputResponseMap {
	out := make(mcp.InputResponseMap, len(need.requests))
	for k, v := range responses {
		if _, asked := need.requests[k]; asked && v != nil {
			out[k] = v
		}
	}
	return out
}

// askOld asks a client that does not speak MRTR the questions of need, each as the
// request of its kind on the call's own session, and returns its answers. Cancelling
// the call (the gateway stopping, the session ending) stops waiting, and so does a
// client that does not answer within pendingTimeout.
func askOld(ctx context.Context, c *call, need *inputNeed) (mcp.InputResponseMap, error) {
	for key, req := range need.requests {
		if kind, ok := canAnswer(c.caller, req); !ok {
			// The server was told this client cannot answer, and asked anyway.
			return nil, fmt.Errorf("%s: %w: it asks for %s (%q), which this client cannot be asked (it did not declare it, or its requests are stateless HTTP POSTs)", c.server, ErrInputNotRelayed, kind, key)
		}
	}
	askCtx, stop := context.WithTimeout(ctx, pendingTimeout)
	defer stop()
	unhook := context.AfterFunc(c.upCtx, stop)
	defer unhook()
	out := make(mcp.InputResponseMap, len(need.requests))
	for key, req := range need.requests {
		res, err := askClient(askCtx, c.session, req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: asking the client for %q failed: %v", c.server, ErrInputNotRelayed, key, err)
		}
		out[key] = res
	}
	return out, nil
}

// requestStateKey keys toolshed's requestStates, drawn when the process starts: a
// state from another run, or made up, is never valid.
var requestStateKey = func() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return key
}()

// newRequestState is the requestState of c's next suspension for input: the call's id,
// a nonce for this round (a state is good for one retry), and an HMAC of both with
// the principal and the tool the retry must come from. Over Streamable HTTP a modern
// client's retry comes on a session of its own, so the state binds the principal (the
// token and profile), not a session.
func newRequestState(c *call) string {
	nonce := rand.Text()
	return c.id + "." + nonce + "." + stateMAC(c.id, nonce, c.principal, c.tool)
}

// checkRequestState reports whether state is one newRequestState made for a call with
// this id, for principal who and tool, compared in constant time.
func checkRequestState(state string, who principal, tool string) bool {
	id, rest, ok := strings.Cut(state, ".")
	if !ok {
		return false
	}
	nonce, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(stateMAC(id, nonce, who, tool)))
}

func stateMAC(id, nonce string, who principal, tool string) string {
	m := hmac.New(sha256.New, requestStateKey)
	for _, part := range []string{id, nonce, who.profile, string(who.cred[:]), tool} {
		fmt.Fprintf(m, "%d:%s", len(part), part) // length-prefixed: no two tuples hash alike
	}
	return hex.EncodeToString(m.Sum(nil))
}

// needInput handles an upstream's input_required answer to c: it returns the result
// that asks a modern client (see suspend), or the retry with an old client's answers,
// asked on its session; or why the need cannot be relayed.
func (r *callRegistry) needInput(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, *callRetry, error) {
	c.rounds++
	if c.rounds > maxInputRounds {
		return nil, nil, fmt.Errorf("%s: %w: it asked for input %d times in one call, and toolshed relays at most %d rounds", c.server, ErrInputNotRelayed, c.rounds, maxInputRounds)
	}
	need, err := parseInputNeed(c.server, raw)
	if err != nil {
		return nil, nil, err
	}
	if c.mrtr {
		res, err := r.suspend(c, need.requests)
		if err != nil {
			return nil, nil, err
		}
		c.need = need
		return res, nil, nil
	}
	answers, err := askOld(ctx, c, need)
	if err != nil {
		return nil, nil, err
	}
	return nil, &callRetry{responses: answers, state: need.state}, nil
}

// maxSuspended bounds the calls of one principal suspended for its clients' answers at
// once. Each holds what its server asked (a requestState of up to maxUpstreamState
// included) until the answer comes or pendingTimeout passes, and a client that calls
// and never answers must not make toolshed hold that without end.
const maxSuspended = 256

// suspend parks c until its client comes back with the answers to requests (see
// resume), and returns the input_required result that asks them, under a requestState
// of toolshed's own; or an error wrapping ErrInputNotRelayed when c's principal has
// maxSuspended calls waiting already. r.mu is not held.
func (r *callRegistry) suspend(c *call, requests mcp.InputRequestMap) (*mcp.CallToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.suspended[c.principal] >= maxSuspended {
		return nil, fmt.Errorf("%s: %w: %d calls of this client (its profile and token) are waiting for its answers already, the most toolshed holds; answer them, or let them expire (%v)", c.server, ErrInputNotRelayed, maxSuspended, pendingTimeout)
	}
	r.suspended[c.principal]++
	c.state = newRequestState(c)
	r.pending[c.state] = c
	c.expiry = time.AfterFunc(pendingTimeout, func() { r.expire(c) })
	return &mcp.CallToolResult{InputRequests: requests, RequestState: c.state}, nil
}

// unsuspend takes c, suspended, out of pending; r.mu is held.
func (r *callRegistry) unsuspend(c *call) {
	delete(r.pending, c.state)
	if r.suspended[c.principal]--; r.suspended[c.principal] <= 0 {
		delete(r.suspended, c.principal)
	}
}

// singleContent returns p as the sampling request of the 2025 era (one content block
// per message, no tools), when it is one.
func singleContent(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, bool) {
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, false
	}
	msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
	for _, m := range p.Messages {
		if m == nil || len(m.Content) > 1 {
			return nil, false
		}
		var content mcp.Content
		if len(m.Content) == 1 {
			content = m.Content[0]
		}
		msgs = append(msgs, &mcp.SamplingMessage{Role: m.Role, Content: content})
	}
	return &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs,
		Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences, SystemPrompt: p.SystemPrompt,
		Temperature: p.Temperature}, true
}

// convertResponse turns a client's answer into the type the upstream's handler returns.
func convertResponse(params mcp.InputRequest, res mcp.InputResponse) (mcp.InputResponse, error) {
	switch params.(type) {
	case *mcp.ElicitParams:
		if er, ok := res.(*mcp.ElicitResult); ok {
			return er, nil
		}
	case *mcp.CreateMessageParams:
		switch m := res.(type) {
		case *mcp.CreateMessageResult:
			return m, nil
		case *mcp.CreateMessageWithToolsResult:
			out := &mcp.CreateMessageResult{Meta: m.Meta, Model: m.Model, Role: m.Role, StopReason: m.StopReason}
			if len(m.Content) > 0 {
				out.Content = m.Content[0]
			}
			return out, nil
		}
	case *mcp.ListRootsParams:
		if lr, ok := res.(*mcp.ListRootsResult); ok {
			return lr, nil
		}
	}
	return nil, fmt.Errorf("the client answered %T to a %T request", res, params)
}

// askClient sends a sampling, elicitation or roots/list request to a client directly
// (protocols before 2026-07-28).
func askClient(ctx context.Context, ss *mcp.ServerSession, params mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := params.(type) {
	case *mcp.ElicitParams:
		return ss.Elicit(ctx, p)
	case *mcp.CreateMessageParams:
		return ss.CreateMessage(ctx, p)
	case *mcp.CreateMessageWithToolsParams:
		// What an upstream's input_required asks (the SDK reads every sampling
		// request so): as the single-content request a client of the 2025 era
		// answers, unless it needs tools or several content blocks.
		if base, ok := singleContent(p); ok {
			return ss.CreateMessage(ctx, base)
		}
		return ss.CreateMessageWithTools(ctx, p)
	case *mcp.ListRootsParams:
		return ss.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("toolshed cannot relay a %T request", params)
}

// canAnswer reports whether a client that supports s can be asked req, and names
// req's kind.
func canAnswer(s clientSupport, req mcp.InputRequest) (kind string, ok bool) {
	switch req.(type) {
	case *mcp.ElicitParams:
		return "elicitation", s.elicits()
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling", s.sampling
	case *mcp.ListRootsParams:
		return "roots", s.roots
	}
	return fmt.Sprintf("%T", req), false
}

// callerSupport is what the client of req can be asked during a call: what it
// declared, but nothing for no session, nor for an old client's stateless HTTP POST,
// which toolshed cannot send requests to (a modern client is asked in the call's
// result, which a POST carries).
func (r *callRegistry) callerSupport(req mcp.Request) clientSupport {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	c := callerOf(req)
	if ss == nil || (!c.modern && r.g.clients.isStateless(ss)) {
		return clientSupport{}
	}
	return c.support()
}
