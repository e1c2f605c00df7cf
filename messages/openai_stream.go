package messages

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The translation of a Chat Completions stream into Messages API events.

func oaEvent(name string, v any) Event {
	data, err := oaMarshal(v)
	if err != nil {
		panic("messages: event " + name + ": " + err.Error()) // only fixed shapes are marshaled
	}
	return Event{Name: name, Data: data}
}

type oaEvUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

func oaToEvUsage(u Usage) oaEvUsage {
	return oaEvUsage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}
}

func oaMessageStart(id, model string, u Usage) Event {
	type msg struct {
		ID           string     `json:"id"`
		Type         string     `json:"type"`
		Role         string     `json:"role"`
		Content      []struct{} `json:"content"`
		Model        string     `json:"model"`
		StopReason   *string    `json:"stop_reason"`
		StopSequence *string    `json:"stop_sequence"`
		Usage        oaEvUsage  `json:"usage"`
	}
	return oaEvent("message_start", struct {
		Type    string `json:"type"`
		Message msg    `json:"message"`
	}{"message_start", msg{ID: id, Type: "message", Role: "assistant", Content: []struct{}{}, Model: model, Usage: oaToEvUsage(u)}})
}

func oaTextStart(index int) Event {
	return oaEvent("content_block_start", struct {
		Type         string     `json:"type"`
		Index        int        `json:"index"`
		ContentBlock oaTextPart `json:"content_block"`
	}{"content_block_start", index, oaTextPart{Type: "text"}})
}

func oaToolStart(index int, id, name string) Event {
	type block struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	return oaEvent("content_block_start", struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock block  `json:"content_block"`
	}{"content_block_start", index, block{"tool_use", id, name, json.RawMessage(`{}`)}})
}

func oaTextDelta(index int, text string) Event {
	return oaEvent("content_block_delta", struct {
		Type  string     `json:"type"`
		Index int        `json:"index"`
		Delta oaTextPart `json:"delta"`
	}{"content_block_delta", index, oaTextPart{Type: "text_delta", Text: text}})
}

func oaJSONDelta(index int, partial string) Event {
	type delta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	return oaEvent("content_block_delta", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}{"content_block_delta", index, delta{"input_json_delta", partial}})
}

func oaBlockStop(index int) Event {
	return oaEvent("content_block_stop", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}{"content_block_stop", index})
}

func oaMessageDelta(reason string, seq *string, u Usage) Event {
	type delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	return oaEvent("message_delta", struct {
		Type  string    `json:"type"`
		Delta delta     `json:"delta"`
		Usage oaEvUsage `json:"usage"`
	}{"message_delta", delta{reason, seq}, oaToEvUsage(u)})
}

func oaMessageStop() Event {
	return oaEvent("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"})
}

// oaResponseEvents are the events the API streams for a whole response: input tokens in
// message_start, each block in one delta, the output tokens in message_delta.
func oaResponseEvents(r *Response) []Event {
	start := r.Usage
	start.OutputTokens = 0
	evs := []Event{oaMessageStart(r.ID, r.Model, start)}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			evs = append(evs, oaTextStart(i), oaTextDelta(i, b.Text), oaBlockStop(i))
		case "tool_use":
			evs = append(evs, oaToolStart(i, b.ID, b.Name), oaJSONDelta(i, string(b.Input)), oaBlockStop(i))
		}
	}
	reason := "end_turn"
	if r.StopReason != nil {
		reason = *r.StopReason
	}
	return append(evs, oaMessageDelta(reason, r.StopSequence, r.Usage), oaMessageStop())
}

// oaEventList is an EventStream over events already made.
type oaEventList struct {
	events []Event
	closed bool
}

func (l *oaEventList) Next() (Event, error) {
	if l.closed || len(l.events) == 0 {
		return Event{}, io.EOF
	}
	ev := l.events[0]
	l.events = l.events[1:]
	return ev, nil
}

func (l *oaEventList) Close() error { l.closed = true; return nil }

// NewOpenAIStream translates a Chat Completions stream (data: {chat.completion.chunk}
// lines ending with data: [DONE]) into Messages API events, shaped as the API sends them:
//
//	message_start          {"type":"message_start","message":{"id":"msg_chatcmpl-…","type":"message","role":"assistant","content":[],"model":…,"stop_reason":null,"stop_sequence":null,"usage":{…}}}
//	content_block_start    {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
//	content_block_delta    {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}
//	content_block_stop     {"type":"content_block_stop","index":0}
//	content_block_start    {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_…","name":"f","input":{}}}
//	content_block_delta    {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}
//	…
//	message_delta          {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{…}}
//	message_stop           {"type":"message_stop"}
//
// A block starts whenever the kind of content changes or a new tool call index starts.
// OpenAI sends usage last, after the finish_reason, so message_start carries zero tokens
// and message_delta the real counts (input, cache read and output tokens); no ping is
// sent. Blocks are never interleaved: should an upstream interleave the argument deltas
// of parallel tool calls, a later call's arguments are held back until the one streaming
// is a complete JSON object, then sent. reasoning deltas are dropped. An error chunk
// ({"error":{...}}) ends the stream with an *APIError; a stream that ends before [DONE]
// and before any finish_reason ends with io.ErrUnexpectedEOF. model is the model name
// the events carry.
func NewOpenAIStream(r io.ReadCloser, model string) EventStream {
	return &openAIStream{body: r, br: bufio.NewReaderSize(r, 64<<10), model: model, text: -1, tools: map[int]*oaStreamTool{}}
}

type oaStreamTool struct {
	id, name string
	args     strings.Builder // everything received
	unsent   int             // bytes of args not yet sent
	block    int             // block index, -1 until started
	closed   bool
}

type openAIStream struct {
	body  io.ReadCloser
	br    *bufio.Reader
	model string

	queue    []Event
	err      error
	finished bool
	closed   bool

	started bool
	next    int           // next block index
	text    int           // index of the open text block, -1 if none
	open    *oaStreamTool // the tool block open, if any
	tools   map[int]*oaStreamTool
	order   []*oaStreamTool // tool calls by first appearance
	anyTool bool

	finish   string
	vllmStop json.RawMessage
	refusal  bool
	usage    Usage
}

func (s *openAIStream) Next() (Event, error) {
	if s.closed {
		return Event{}, errors.New("openai upstream: stream closed")
	}
	for len(s.queue) == 0 {
		switch {
		case s.err != nil:
			return Event{}, s.err
		case s.finished:
			return Event{}, io.EOF
		}
		s.err = s.step()
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

func (s *openAIStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.body.Close()
}

func (s *openAIStream) emit(evs ...Event) { s.queue = append(s.queue, evs...) }

// step reads one line of the stream and translates it.
func (s *openAIStream) step() error {
	line, err := s.br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("openai upstream: reading stream: %w", err)
	}
	if len(line) == 0 && err != nil {
		if err == io.EOF {
			if s.finish != "" {
				s.end()
				return nil
			}
			return fmt.Errorf("openai upstream: stream ended before [DONE]: %w", io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("openai upstream: reading stream: %w", err)
	}
	line = bytes.TrimRight(line, "\r\n")
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // blank line, comment, oaEvent:, id:, retry:
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if string(data) == "[DONE]" {
		s.end()
		return nil
	}
	var c oaCompletion
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("openai upstream: bad chunk %.200q: %w", data, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return oaErrorInBody(data)
	}
	if !s.started {
		s.started = true
		s.emit(oaMessageStart(oaMessageID(c.ID), s.modelOr(c.Model), Usage{}))
	}
	if c.Usage != nil {
		s.usage = c.Usage.usage()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if err := s.delta(ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != "" {
			s.finish, s.vllmStop = ch.FinishReason, ch.StopReason
			s.closeBlocks()
		}
	}
	return nil
}

func (s *openAIStream) modelOr(upstream string) string {
	if s.model != "" {
		return s.model
	}
	return upstream
}

func (s *openAIStream) delta(d oaOutMessage) error {
	if t := oaContentText(d.Content); t != "" {
		s.textDelta(t)
	}
	if d.Refusal != "" {
		s.refusal = true
		s.textDelta(d.Refusal)
	}
	calls := d.ToolCalls
	if d.FunctionCall != nil {
		calls = append(calls, oaOutToolCall{Function: *d.FunctionCall})
	}
	for _, tc := range calls {
		idx := 0
		if tc.Index != nil {
			idx = *tc.Index
		}
		if err := s.toolDelta(idx, tc.ID, tc.Function.Name, oaArguments(tc.Function.Arguments)); err != nil {
			return err
		}
	}
	return nil
}

func (s *openAIStream) textDelta(t string) {
	if s.text < 0 {
		s.closeBlocks()
		s.text = s.next
		s.next++
		s.emit(oaTextStart(s.text))
	}
	s.emit(oaTextDelta(s.text, t))
}

func (s *openAIStream) toolDelta(idx int, id, name, args string) error {
	t := s.tools[idx]
	if t == nil {
		t = &oaStreamTool{block: -1}
		s.tools[idx] = t
		s.order = append(s.order, t)
		s.anyTool = true
	}
	if t.closed {
		if strings.TrimSpace(args) == "" {
			return nil
		}
		return &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream model sent arguments for a tool call that had already ended"}
	}
	if t.id == "" {
		t.id = id
	}
	if t.name == "" {
		t.name = name
	}
	t.args.WriteString(args)
	t.unsent += len(args)
	if s.text >= 0 {
		s.emit(oaBlockStop(s.text))
		s.text = -1
	}
	s.pump()
	return nil
}

// pump sends what can be sent of the tool calls: the open one's new arguments, and, once
// its arguments are a complete object, the next call waiting.
func (s *openAIStream) pump() {
	for {
		if s.open != nil {
			s.sendArgs(s.open)
			waiting := s.waitingTool()
			if waiting == nil || !oaCompleteObject(s.open.args.String()) {
				return
			}
			s.closeTool()
		}
		w := s.waitingTool()
		if w == nil {
			return
		}
		s.startTool(w)
	}
}

func (s *openAIStream) waitingTool() *oaStreamTool {
	for _, t := range s.order {
		if t.block < 0 {
			return t
		}
	}
	return nil
}

func (s *openAIStream) startTool(t *oaStreamTool) {
	if t.id == "" {
		t.id = oaNewID("toolu_")
	}
	t.block = s.next
	s.next++
	s.open = t
	s.emit(oaToolStart(t.block, t.id, t.name))
}

func (s *openAIStream) sendArgs(t *oaStreamTool) {
	if t.unsent == 0 {
		return
	}
	all := t.args.String()
	s.emit(oaJSONDelta(t.block, all[len(all)-t.unsent:]))
	t.unsent = 0
}

func (s *openAIStream) closeTool() {
	s.open.closed = true
	s.emit(oaBlockStop(s.open.block))
	s.open = nil
}

// closeBlocks ends the open block and sends every tool call still waiting.
func (s *openAIStream) closeBlocks() {
	if s.text >= 0 {
		s.emit(oaBlockStop(s.text))
		s.text = -1
	}
	for {
		if s.open != nil {
			s.sendArgs(s.open)
			s.closeTool()
		}
		w := s.waitingTool()
		if w == nil {
			return
		}
		s.startTool(w)
	}
}

func oaCompleteObject(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 0 && s[0] == '{' && json.Valid([]byte(s))
}

// end closes the message: message_delta with the stop reason and usage, message_stop.
func (s *openAIStream) end() {
	if !s.started {
		s.started = true
		s.emit(oaMessageStart(oaNewID("msg_"), s.model, Usage{}))
	}
	s.closeBlocks()
	reason, seq := oaStopReason(s.finish, s.vllmStop, s.anyTool, s.refusal)
	s.emit(oaMessageDelta(reason, seq, s.usage), oaMessageStop())
	s.finished = true
}
