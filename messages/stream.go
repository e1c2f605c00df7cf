package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/internal/redact"
)

// Stream answers a request as server-sent events, calling emit for each. The client
// sees one message: one message_start, the content blocks of every upstream call
// numbered in one sequence, with each search call turned into a server_tool_use
// (streamed as the model writes it) followed by one content_block_start carrying the
// whole tool_search_tool_result, and one message_delta with the usage summed over the
// upstream calls, then message_stop.
//
// An error before the first event is returned and nothing was emitted, so the caller
// can still answer with an error status; an error after it is emitted as an "error"
// event and also returned.
func (p *Proxy) Stream(ctx context.Context, req *Request, h http.Header, emit func(Event) error) error {
	ctx, done := p.requestContext(ctx)
	defer done()
	pr, aerr := p.prepare(req)
	if aerr != nil {
		return aerr
	}
	s := &streamer{turn: p.newTurn(ctx, pr), emit: emit}
	err := stoppedError(ctx, s.run(ctx, h))
	if err != nil && s.started {
		var ae *APIError
		if !errors.As(err, &ae) || !ae.emitted {
			emit(errorEvent(asAPIError(err)))
		}
	}
	return err
}

// streamer relays the upstream streams of one request as one stream.
type streamer struct {
	*turn
	emit    func(Event) error
	started bool // message_start was emitted
	sum     Usage
	delta   json.RawMessage // the last upstream message_delta's "delta"

	// Per upstream call.
	blocks   map[int]*streamBlock // by upstream index
	searched bool
	client   bool
}

// streamBlock is one content block of the current upstream stream.
type streamBlock struct {
	out   int             // the client's index, which is also its index in content
	start json.RawMessage // the block as the upstream started it
	model Block           // the same, decoded
	kind  useKind
	use   *Block // the server_tool_use it became, if kind is not clientUse

	// Deltas so far, appended in place: a stream of many small deltas must not copy
	// what came before at each one.
	text, thinking, signature strings.Builder
	input                     []byte
	citations                 []json.RawMessage
}

// add appends a block to the response content and returns its client index.
func (s *streamer) add(b Block) int {
	s.content = append(s.content, b)
	return len(s.content) - 1
}

func (s *streamer) blockStart(e streamEvent) error {
	var b Block
	if err := json.Unmarshal(e.ContentBlock, &b); err != nil {
		return fmt.Errorf("the upstream sent a content block that is not JSON: %v", err)
	}
	sb := &streamBlock{start: e.ContentBlock, model: b, kind: s.kind(b)}
	s.blocks[e.Index] = sb
	if sb.kind == clientUse || sb.kind == clientSearchUse {
		if b.Type == "tool_use" {
			s.client = true
		}
		sb.out = s.add(b)
		return s.emitIndexed("content_block_start", sb.out, "content_block", e.ContentBlock)
	}
	// The server_tool_use starts with an empty input, as the API streams it; its input
	// follows in deltas.
	use := s.serverUse(b, sb.kind)
	sb.use = &use
	sb.out = s.add(use)
	return s.emitIndexed("content_block_start", sb.out, "content_block", serverUseJSON(use.ID, use.Name, json.RawMessage(`{}`)))
}

func (s *streamer) blockDelta(e streamEvent) error {
	sb, ok := s.blocks[e.Index]
	if !ok {
		return fmt.Errorf("the upstream sent a delta for content block %d, which it never started", e.Index)
	}
	var d struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		PartialJSON string          `json:"partial_json"`
		Thinking    string          `json:"thinking"`
		Signature   string          `json:"signature"`
		Citation    json.RawMessage `json:"citation"`
	}
	if err := json.Unmarshal(e.Delta, &d); err != nil {
		return fmt.Errorf("the upstream sent a delta that is not JSON: %v", err)
	}
	switch d.Type {
	case "text_delta":
		sb.text.WriteString(d.Text)
	case "input_json_delta":
		sb.input = append(sb.input, d.PartialJSON...)
	case "thinking_delta":
		sb.thinking.WriteString(d.Thinking)
	case "signature_delta":
		sb.signature.WriteString(d.Signature)
	case "citations_delta":
		sb.citations = append(sb.citations, d.Citation)
	}
	if sb.kind == unloadedUse || sb.kind == clientSearchUse {
		return nil // its input is sent whole at its stop: the exact-name search, or toolshed's answer
	}
	return s.emitIndexed("content_block_delta", sb.out, "delta", e.Delta)
}

// finish returns the block as the upstream streamed it, deltas applied.
func (sb *streamBlock) finish() Block {
	raw := sb.start
	set := func(key string, v any) {
		j, _ := json.Marshal(v)
		raw = setMember(raw, key, j)
	}
	if sb.text.Len() > 0 {
		set("text", sb.model.Text+sb.text.String())
	}
	if len(sb.input) > 0 {
		if json.Valid(sb.input) {
			raw = setMember(raw, "input", sb.input)
		} else {
			// A call cut off (max_tokens) leaves input that is not JSON.
			raw = setMember(raw, "input", json.RawMessage(`{}`))
		}
	}
	if sb.thinking.Len() > 0 {
		var prev struct {
			Thinking string `json:"thinking"`
		}
		json.Unmarshal(sb.start, &prev)
		set("thinking", prev.Thinking+sb.thinking.String())
	}
	if sb.signature.Len() > 0 {
		set("signature", sb.signature.String())
	}
	if len(sb.citations) > 0 {
		var prev struct {
			Citations []json.RawMessage `json:"citations"`
		}
		json.Unmarshal(sb.start, &prev)
		set("citations", append(prev.Citations, sb.citations...))
	}
	var b Block
	if json.Unmarshal(raw, &b) != nil {
		return sb.model
	}
	return b
}

func (s *streamer) blockStop(e streamEvent) error {
	sb, ok := s.blocks[e.Index]
	if !ok {
		return fmt.Errorf("the upstream stopped content block %d, which it never started", e.Index)
	}
	model := sb.finish()
	if sb.kind == clientSearchUse {
		b := s.answerClientSearch(model)
		if err := s.emitIndexed("content_block_delta", sb.out, "delta", inputDelta(orEmptyObject(b.Input))); err != nil {
			return err
		}
		s.content[sb.out] = b
		return s.emitIndexed("content_block_stop", sb.out, "", nil)
	}
	if sb.use == nil {
		s.callMade(model)
		s.content[sb.out] = model
		return s.emitIndexed("content_block_stop", sb.out, "", nil)
	}
	use := *sb.use
	if sb.kind == unloadedUse {
		if err := s.emitIndexed("content_block_delta", sb.out, "delta", inputDelta(use.Input)); err != nil {
			return err
		}
	} else {
		use.Input = orEmptyObject(model.Input)
		use.Raw = serverUseJSON(use.ID, use.Name, use.Input)
	}
	s.content[sb.out] = use
	if err := s.emitIndexed("content_block_stop", sb.out, "", nil); err != nil {
		return err
	}
	result := s.result(model, use, sb.kind)
	s.searched = true
	out := s.add(result)
	if err := s.emitIndexed("content_block_start", out, "content_block", result.Raw); err != nil {
		return err
	}
	return s.emitIndexed("content_block_stop", out, "", nil)
}

// inputDelta is an input_json_delta carrying a whole input, its members in the API's
// order.
func inputDelta(input json.RawMessage) json.RawMessage {
	d, _ := json.Marshal(struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}{"input_json_delta", string(input)})
	return d
}

// emitIndexed emits a content block event with the client's index, its members in the
// API's order: type, index, then key.
func (s *streamer) emitIndexed(typ string, index int, key string, value json.RawMessage) error {
	data := fmt.Appendf(nil, `{"type":%q,"index":%d`, typ, index)
	if key != "" {
		data = fmt.Appendf(data, `,%q:%s`, key, value)
	}
	return s.emit(Event{Name: typ, Data: append(data, '}')})
}

// setMember returns the JSON object obj with member key set to value.
func setMember(obj json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	json.Unmarshal(obj, &m)
	m[key] = value
	out, _ := json.Marshal(m)
	return out
}

// errorEvent is the "error" event of a stream.
func errorEvent(e *APIError) Event {
	return Event{Name: "error", Data: errorBody(e)}
}

// errorBody is the Messages API's error body.
func errorBody(e *APIError) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": e.Type, "message": e.Message}})
	return b
}

func (s *streamer) run(ctx context.Context, h http.Header) error {
	for calls := 1; ; calls++ {
		stop, err := s.call(ctx, h)
		if err != nil {
			return err
		}
		if !s.searched || s.client || stop != "tool_use" {
			break
		}
		if calls >= s.p.maxIterations() {
			s.delta = setMember(s.delta, "stop_reason", json.RawMessage(`"pause_turn"`))
			break
		}
	}
	usage, _ := json.Marshal(s.turn.usage(s.sum))
	data, _ := json.Marshal(struct {
		Type  string          `json:"type"`
		Delta json.RawMessage `json:"delta"`
		Usage json.RawMessage `json:"usage"`
	}{"message_delta", s.delta, usage})
	if err := s.emit(Event{Name: "message_delta", Data: data}); err != nil {
		return err
	}
	return s.emit(Event{Name: "message_stop", Data: json.RawMessage(`{"type":"message_stop"}`)})
}

// streamEvent is the part of an event the streamer reads.
type streamEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Message      *Response       `json:"message"`
	Usage        *Usage          `json:"usage"`
	Error        *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// call relays one upstream stream and returns its stop reason.
func (s *streamer) call(ctx context.Context, h http.Header) (string, error) {
	st, err := s.p.Upstream.Stream(ctx, s.request(), h)
	if err != nil {
		return "", err
	}
	defer st.Close()
	s.blocks, s.searched, s.client = map[int]*streamBlock{}, false, false
	var stop string
	var usage Usage // this call's, as message_start and message_delta report it
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("the upstream stream ended before message_stop: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return "", err
		}
		var e streamEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return "", fmt.Errorf("the upstream sent a %s event that is not JSON: %v", ev.Name, err)
		}
		if e.Type == "" {
			e.Type = ev.Name
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				usage = e.Message.Usage
			}
			if !s.started {
				s.started = true
				err = s.emit(ev)
			}
		case "content_block_start":
			err = s.blockStart(e)
		case "content_block_delta":
			err = s.blockDelta(e)
		case "content_block_stop":
			err = s.blockStop(e)
		case "message_delta":
			s.delta = e.Delta
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			json.Unmarshal(e.Delta, &d)
			stop = d.StopReason
			if e.Usage != nil {
				mergeUsage(&usage, *e.Usage)
			}
		case "message_stop":
			s.sum.Add(usage)
			return stop, nil
		case "error":
			ae := &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream stream failed"}
			if e.Error != nil {
				// Its message may echo the key that was sent, as an error answer's may
				// (see readAPIError).
				ae = ErrorFromType(e.Error.Type, redact.String(e.Error.Message))
			}
			if s.started {
				// The event is rebuilt from what was read, not passed on as it came,
				// so that the client sees the error as the log does.
				ae.emitted = true
				if err := s.emit(errorEvent(ae)); err != nil {
					return "", err
				}
			}
			return "", ae
		default: // ping and events added later
			if s.started {
				err = s.emit(ev)
			}
		}
		if err != nil {
			return "", err
		}
	}
}

// mergeUsage applies a message_delta's usage, whose counts are totals for the message
// so far, over the one message_start gave.
func mergeUsage(u *Usage, d Usage) {
	u.OutputTokens = d.OutputTokens
	if d.InputTokens > 0 {
		u.InputTokens = d.InputTokens
	}
	if d.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
	if d.ServerToolUse != nil {
		u.ServerToolUse = d.ServerToolUse
	}
}
