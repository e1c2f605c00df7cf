package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/searchlog/recent"
	"github.com/toolshed/toolshed/searchlog/record"
)

// SearchRecorder is where the Proxy records its searches and the calls they led to: a
// *searchlog.Log, which queues them off the request path and keeps query text as its
// options say.
type SearchRecorder interface {
	Search(record.Search)
	Call(record.Call)
}

// The proxy sees a tool call twice: in the model's answer (the tool_use), and in the
// client's next request (its tool_result, which says whether the tool failed). A call is
// recorded at the second, with the time between them as its duration; until then it is
// pending, for at most maxPendingCalls calls.
const maxPendingCalls = 8192

// logState is what the Proxy keeps for its search log.
type logState struct {
	searches recent.Searches // by session, to give each call its search's rank and query

	mu      sync.Mutex
	pending fifoMap[pendingKey, pendingCall]
}

type pendingKey struct{ session, id string }

type pendingCall struct {
	tool string // as the log names it (see logName)
	at   time.Time
}

// sessionOf names a request's conversation in the search log: a hash of who sent it
// (its key) and of the session it names (Claude Code's X-Claude-Code-Session-Id), never
// either in clear.
func sessionOf(client [16]byte, session string) string {
	h := sha256.New()
	h.Write(client[:])
	h.Write([]byte(session))
	return "proxy:" + hex.EncodeToString(h.Sum(nil)[:12])
}

// logName is the name the search log gives a deferred tool of the client's: the
// qualified name (server__tool) the gateway gives the same tool, so that the proxy's
// records and the gateway's name tools alike. Claude Code's mcp__SERVER__TOOL is split
// into its server and tool; a catalog tool of the same name gives its own.
func (p *Proxy) logName(name string) string {
	if t, ok := p.clientTools()[foldName(name)]; ok {
		return t.Qualified
	}
	server, tool := splitCCName(name)
	if server == builtinServer {
		return name
	}
	return catalog.Qualify(server, tool)
}

// logSearch records one search of the request's conversation that returned names (the
// client's names of the tools), best first.
func (t *turn) logSearch(mode, query string, names []string, code string, took time.Duration) {
	p := t.p
	if p.SearchLog == nil {
		return
	}
	s := record.Search{Time: time.Now().Add(-took), Source: "proxy", Session: t.pr.req.session, Query: query, Mode: mode, Latency: took, Error: code}
	tools := make([]string, len(names))
	for i, n := range names {
		tools[i] = p.logName(n)
		s.Results = append(s.Results, record.Hit{Tool: tools[i], Rank: i + 1})
	}
	p.records.searches.Remember(s.Session, query, tools)
	p.SearchLog.Search(s)
}

// callMade notes the model's call b of a deferred tool, to be recorded once the
// client's next request says how it went.
func (t *turn) callMade(b Block) {
	p := t.p
	if p.SearchLog == nil || b.Type != "tool_use" || b.ID == "" {
		return
	}
	if _, ok := t.pr.deferred[b.Name]; !ok {
		return
	}
	tool := p.logName(b.Name)
	l := &p.records
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending.add(pendingKey{t.pr.req.session, b.ID}, pendingCall{tool, time.Now()}, maxPendingCalls)
}

// callsAnswered records the pending calls whose results the request carries.
func (p *Proxy) callsAnswered(req *Request) {
	if p.SearchLog == nil {
		return
	}
	l := &p.records
	var done []record.Call
	l.mu.Lock()
	if l.pending.len() > 0 {
		for _, m := range req.Messages {
			if m.Role != "user" {
				continue
			}
			for _, b := range m.Content {
				if b.Type != "tool_result" {
					continue
				}
				c, ok := l.pending.take(pendingKey{req.session, b.ToolUseID})
				if !ok {
					continue
				}
				outcome := record.OutcomeOK
				if b.IsError {
					outcome = record.OutcomeToolError
				}
				server, _, _ := strings.Cut(c.tool, "__")
				done = append(done, record.Call{Time: c.at, Source: "proxy", Session: req.session, Tool: c.tool, Server: server, Outcome: outcome, Duration: time.Since(c.at)})
			}
		}
	}
	l.mu.Unlock()
	for _, c := range done {
		c.Rank, c.Query = l.searches.Found(c.Session, c.Tool)
		p.SearchLog.Call(c)
	}
}

// logServerSearch records a search of one of the request's search tools, which
// answered content and found names.
func (t *turn) logServerSearch(tool *Tool, input, content json.RawMessage, names []string, took time.Duration) {
	if t.p.SearchLog == nil {
		return
	}
	var in struct {
		Pattern string `json:"pattern"`
		Query   string `json:"query"`
	}
	json.Unmarshal(orEmptyObject(input), &in)
	query := in.Query
	if tool.SearchKind() == "regex" {
		query = in.Pattern
	}
	_, code, _ := searchResultRefs(content)
	t.logSearch(tool.SearchKind(), query, names, code, took)
}
