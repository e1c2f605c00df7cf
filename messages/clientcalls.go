package messages

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/toolshed/toolshed/catalog"
)

// What the Proxy keeps of clients' own searches across requests: the catalog's tools by
// the client's names, the indexes of their deferred tools, the definitions they showed,
// and the model's own words of each call it answered (see clientsearch.go).

// clientState is what the Proxy keeps for clients' own searches.
type clientState struct {
	once    sync.Once
	known   map[string]*catalog.Tool // ClientTools by Claude Code's name
	indexes clientIndexes
	learned learnedDefs // the definitions clients' own requests carried

	mu     sync.Mutex
	warned map[string]bool                   // lists of unknown tools already logged
	calls  fifoMap[callKey, json.RawMessage] // rewritten calls: the model's own input
}

// callKey names one rewritten call: the client that made it and the call's id. The
// client is part of it so that a request naming another client's call id never gets
// that client's query back.
type callKey struct {
	client [16]byte
	id     string
}

// maxClientCalls bounds the rewritten calls remembered: a conversation reaches this
// many ToolSearch calls rarely, and an older one forgotten only shows the model its
// call as the selection it became.
const maxClientCalls = 8192

// maxWarned bounds the lists of unknown tools logged, so a client inventing names
// cannot grow the set.
const maxWarned = 256

// warnOnce says, once for each list of them, which of the client's deferred tools
// toolshed has no definition of, and whether it ranked them by name (ranked) or left the
// search to the client.
func (c *clientState) warnOnce(log interface{ Warn(string, ...any) }, unknown []string, ranked bool) {
	key := strings.Join(unknown, ",")
	c.mu.Lock()
	seen := c.warned[key]
	if !seen && len(c.warned) < maxWarned {
		if c.warned == nil {
			c.warned = map[string]bool{}
		}
		c.warned[key] = true
	}
	c.mu.Unlock()
	if seen {
		return
	}
	shown := unknown[:min(len(unknown), 5)]
	if ranked {
		log.Warn("toolshed has no definition of some of the client's deferred tools and ranks them by their names; "+
			"give toolshed proxy the client's servers (--config) or their catalog (--catalog)", "tools", len(unknown), "first", strings.Join(shown, ","))
		return
	}
	log.Warn("the client's tool search is left to it: toolshed has no definition of its deferred tools, so cannot rank better than it; "+
		"give toolshed proxy the client's servers (--config) or their catalog (--catalog)", "tools", len(unknown), "first", strings.Join(shown, ","))
}

// remember keeps the model's own input of a call that was rewritten.
func (c *clientState) remember(client [16]byte, id string, input json.RawMessage) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls.add(callKey{client, id}, bytes.Clone(input), maxClientCalls)
}

// restore returns msgs with each ToolSearch call that was rewritten for this client
// carrying the model's own input again, so the model reads its own words; msgs itself
// when there is none.
func (c *clientState) restore(client [16]byte, msgs []Message) []Message {
	// The ToolSearch calls are found without the lock, which every client's requests
	// take: only their lookups hold it.
	type at struct{ msg, block int }
	var calls []at
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		for j, b := range m.Content {
			if b.Type == "tool_use" && b.Name == clientSearchName {
				calls = append(calls, at{i, j})
			}
		}
	}
	if len(calls) == 0 {
		return msgs
	}
	origs := make([]json.RawMessage, len(calls))
	found := false
	c.mu.Lock()
	for k, a := range calls {
		origs[k], _ = c.calls.get(callKey{client, msgs[a.msg].Content[a.block].ID})
		found = found || origs[k] != nil
	}
	c.mu.Unlock()
	if !found {
		return msgs
	}
	out := slices.Clone(msgs)
	copied := -1 // the message last given a copy of its own: calls come in message order
	for k, a := range calls {
		orig := origs[k]
		if orig == nil {
			continue
		}
		if a.msg != copied {
			out[a.msg] = Message{Role: msgs[a.msg].Role, Content: slices.Clone(msgs[a.msg].Content)}
			copied = a.msg
		}
		b := &out[a.msg].Content[a.block]
		b.Input = orig
		if len(b.Raw) > 0 {
			b.Raw = withMember(b.Raw, "input", orig)
		}
	}
	return out
}

// clientOf identifies the client of an HTTP request by its credentials, hashed.
func clientOf(apiKey, authorization string) [16]byte {
	sum := sha256.Sum256([]byte(apiKey + "\x00" + authorization))
	return [16]byte(sum[:16])
}
