package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshed/toolshed/search"
)

// An approval rule (hooks: approve) makes toolshed ask the user, through elicitation,
// before a call runs: the call is answered with the question (input_required), and the
// client calls again with the user's answer. Honouring any answer a retry carries would
// let a client skip the question (a first call that brings "accept" itself), and an
// answer given for one call approve another: different arguments, another tool, another
// principal's call, or the same call again and again. So the question goes out under a
// requestState of its own (approvalStatePrefix) that binds the answer to what the user
// was shown: an HMAC under the process's key over a nonce, the principal, the tool and
// the call's arguments; it is good for one retry, within pendingTimeout, and a retry
// without it, or with one used, expired or made for anything else, is refused before
// anything runs. Both eras take the same path: the go-sdk's server asks a 2025 client
// itself and calls again with the state (serverMultiRoundTripMiddleware), a 2026-07-28
// client retries with it.

// approvalStatePrefix starts the requestState of an approval question, which resume
// (the call suspended for an upstream's input) never takes for its own.
const approvalStatePrefix = "approve."

// maxApprovals bounds the approval questions waiting for their answers at once: each
// is a few bytes, but a client that calls and never answers must not grow the table
// without end. Past it the oldest is dropped (its retry is then refused, as expired).
const maxApprovals = 4096

// maxApprovalsPerPrincipal bounds the questions one principal (a profile and token)
// may have waiting: past it, that principal's own oldest is dropped. Without it, one
// client that calls and never answers would push every other principal's questions
// out of the table (maxApprovals), and their users' approvals would be refused.
const maxApprovalsPerPrincipal = 64

// approvals holds the approval questions asked and not yet answered.
type approvals struct {
	asked map[string]approvalAsked
	order []string // states in the order asked, for the bounds
	per   map[principal]int
}

// approvalAsked is a question waiting for its answer: until when, and whose.
type approvalAsked struct {
	expiry time.Time
	who    principal
}

// issue returns the requestState of a new question for a call of tool with args by
// who: an approval (approvalStatePrefix) or a per-user sign-in (signInStatePrefix,
// see usersignin.go), which share the table and its bounds. r.mu is held.
func (a *approvals) issue(prefix string, who principal, tool string, args []byte, now time.Time) string {
	if a.asked == nil {
		a.asked, a.per = map[string]approvalAsked{}, map[principal]int{}
	}
	for len(a.order) > 0 {
		first, live := a.asked[a.order[0]]
		if live && len(a.asked) < maxApprovals && now.Before(first.expiry) {
			break
		}
		a.forget(a.order[0])
		a.order = a.order[1:]
	}
	if a.per[who] >= maxApprovalsPerPrincipal {
		for _, s := range a.order { // who's oldest question still waiting
			if q, ok := a.asked[s]; ok && q.who == who {
				a.forget(s)
				break
			}
		}
	}
	nonce := rand.Text()
	state := prefix + nonce + "." + approvalMAC(prefix, nonce, who, tool, args)
	a.asked[state] = approvalAsked{expiry: now.Add(pendingTimeout), who: who}
	a.per[who]++
	a.order = append(a.order, state)
	if len(a.order) > 2*maxApprovals { // answered questions behind a live one
		a.order = slices.DeleteFunc(a.order, func(s string) bool { _, ok := a.asked[s]; return !ok })
	}
	return state
}

// forget drops question state, if it is still waiting.
func (a *approvals) forget(state string) {
	q, ok := a.asked[state]
	if !ok {
		return
	}
	delete(a.asked, state)
	if a.per[q.who]--; a.per[q.who] <= 0 {
		delete(a.per, q.who)
	}
}

// take reports whether state is a question asked for a call of tool with args by who,
// unanswered and unexpired, and forgets it: it answers one retry only. r.mu is held.
func (a *approvals) take(state string, who principal, tool string, args []byte, now time.Time) bool {
	q, ok := a.asked[state]
	if !ok {
		return false
	}
	kind, rest, _ := strings.Cut(state, ".")
	nonce, mac, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(approvalMAC(kind+".", nonce, who, tool, args))) {
		return false // not this call's: left for the call it is for
	}
	a.forget(state) // order keeps it until it comes first; asked is what counts
	return now.Before(q.expiry)
}

// approvalMAC binds a question of kind prefix to the principal, the tool and the
// arguments the user was shown.
func approvalMAC(prefix, nonce string, who principal, tool string, args []byte) string {
	sum := sha256.Sum256(args)
	return stateMAC(prefix+"question", nonce+"."+hex.EncodeToString(sum[:]), who, tool)
}

// isApprovalState reports whether state is the requestState of an approval question
// (see approvals), rather than of a call suspended for an upstream's input.
func isApprovalState(state string) bool { return strings.HasPrefix(state, approvalStatePrefix) }

// errApprovalNotAsked is what a retry gets that brings an approval toolshed did not ask
// for this call, or asked and has had its answer already, or asked too long ago.
func errApprovalNotAsked(tool string) string {
	return fmt.Sprintf("this call carries an answer to an approval question toolshed did not ask for it (or asked for other arguments, or had answered already, or more than %v ago); call %s again to be asked", pendingTimeout, tool)
}

// refuseState refuses a retry whose requestState toolshed did not issue for it (made up,
// tampered with, another principal's or another call's, used, expired) with
// InvalidParams, as MCP 2026-07-28 says a server rejects state that fails its integrity
// check (SEP-2322), rather than with a result a client could take for the call's. The
// activity log records it as expired.
func refuseState(finish func(*mcp.CallToolResult, string) (*mcp.CallToolResult, error), msg string) (*mcp.CallToolResult, error) {
	finish(errorResult(search.InvalidToolInput, "%s", msg), "expired")
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + msg}
}

// approval asks the user, through elicitation, whether to run a tool. It reports true
// once the user accepted; otherwise the result to return (a question for the client, or
// a refusal), or none when the call brings an answer to a question toolshed did not ask
// it (see approvals), which is refused as a bad requestState.
func (r *callRegistry) approval(ctx context.Context, spec callSpec) (*mcp.CallToolResult, bool) {
	who := r.g.clients.principalOf(spec.req.Session)
	resp, answered := spec.req.Params.InputResponses[approvalInput]
	if state := spec.req.Params.RequestState; answered || state != "" {
		r.mu.Lock()
		asked := isApprovalState(state) && r.approvals.take(state, who, spec.tool.Qualified, spec.args, time.Now())
		r.mu.Unlock()
		if !asked || !answered {
			return nil, false
		}
		if er, ok := resp.(*mcp.ElicitResult); ok && er.Action == "accept" {
			if v, ok := er.Content["approve"].(bool); !ok || v {
				return nil, true
			}
		}
		return errorResult(PermissionDenied, "the user did not approve calling %s; do not retry it without asking the user", spec.tool.Qualified), false
	}
	if !canElicit(spec.req) {
		missingCapability(ctx, needsElicitation(spec.tool.Qualified))
		return errorResult(PermissionDenied, "%s needs the user's approval, but this client cannot ask the user (it does not support MCP elicitation); use a client that does, or ask the operator to lift the approval rule", spec.tool.Qualified), false
	}
	args := string(redactArguments(spec.args, r.g.hooks.secrets))
	r.mu.Lock()
	state := r.approvals.issue(approvalStatePrefix, who, spec.tool.Qualified, spec.args, time.Now())
	r.mu.Unlock()
	return &mcp.CallToolResult{RequestState: state, InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
		Message: fmt.Sprintf("Allow the assistant to call %s (server %s) with these arguments?\n%s", spec.tool.Qualified, spec.tool.Server, args),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Allow this call", "default": false},
		}, "required": []string{"approve"}},
	}}}, false
}
