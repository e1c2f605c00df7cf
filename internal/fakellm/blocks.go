package fakellm

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/tokens"
)

// countMembers counts, with o200k_base, the JSON of the named top-level members of a
// request body: what the request puts before the model.
func countMembers(body []byte, names ...string) int {
	var m map[string]json.RawMessage
	json.Unmarshal(body, &m)
	n := 0
	for _, name := range names {
		n += tokens.Count(string(m[name]))
	}
	return n
}

// toolCall is a tool_use block of a reply.
type toolCall struct {
	ID, Namespace, Name string
	Input               json.RawMessage // "{}" when the block has none
}

// splitContent returns a reply's text (its text blocks joined) and its tool_use blocks,
// in order: the two things every API shapes its own way.
func splitContent(content []json.RawMessage) (string, []toolCall) {
	var text strings.Builder
	var calls []toolCall
	for _, raw := range content {
		var b struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Input     json.RawMessage `json:"input"`
		}
		json.Unmarshal(raw, &b)
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if len(b.Input) == 0 {
				b.Input = json.RawMessage(`{}`)
			}
			calls = append(calls, toolCall{ID: b.ID, Namespace: b.Namespace, Name: b.Name, Input: b.Input})
		}
	}
	return text.String(), calls
}

// take returns the next reply and its number, or answers the request with fail (given
// the HTTP status, the Messages API error type and a message) when the script is over
// or the reply is a scripted error.
func (s *script) take(fail func(status int, errorType, msg string)) (Reply, int, bool) {
	reply, n, ok := s.next()
	switch {
	case !ok:
		fail(http.StatusInternalServerError, "api_error", "the script has no more replies")
		return Reply{}, 0, false
	case reply.Status != 0 && reply.Status != http.StatusOK:
		fail(reply.Status, reply.ErrorType, "scripted "+reply.ErrorType)
		return Reply{}, 0, false
	}
	return reply, n, true
}
