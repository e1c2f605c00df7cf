package messages

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/internal/redact"
)

// DefaultAnthropicURL is the Anthropic API.
const DefaultAnthropicURL = "https://api.anthropic.com"

// DefaultAnthropicVersion is the anthropic-version sent when the client sends none.
const DefaultAnthropicVersion = "2023-06-01"

// Anthropic is an Anthropic-compatible Messages API upstream: the Anthropic API itself,
// or any server that speaks its wire format. What toolshed does not act on goes to it
// as the client sent it: the query string (Request.RawQuery), the headers the handler
// passes on (all but the client's credentials, hop-by-hop and transport headers), and
// every member of the body and every message and block toolshed does not rewrite, with
// their bytes. APIKey goes as x-api-key in place of the client's key.
type Anthropic struct {
	// BaseURL is the API's address without /v1; empty means DefaultAnthropicURL.
	BaseURL string
	// APIKey is sent as x-api-key. It is never logged or put in an error.
	APIKey string
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client
	// Model, when set, replaces the model of every request.
	Model string
	// MaxAnswerBytes bounds what is read of one answer: the body of one that is not a
	// stream, everything read of a stream. An answer over it fails its request alone
	// with an api_error (ErrAnswerTooLarge). Zero means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
}

// request is req as sent: with Model, and streamed or not.
func (a *Anthropic) request(req *Request, stream bool) *Request {
	out := *req
	out.Stream = stream
	if a.Model != "" {
		out.Model = a.Model
	}
	return &out
}

func (a *Anthropic) url(path string) string {
	base := a.BaseURL
	if base == "" {
		base = DefaultAnthropicURL
	}
	return strings.TrimSuffix(base, "/") + path
}

// post sends the body b to path, with the client's query and headers h, and returns
// the response when its status is 2xx, else the upstream's error as an APIError.
func (a *Anthropic) post(ctx context.Context, path, query string, b []byte, h http.Header) (*http.Response, error) {
	u := a.url(path)
	if query != "" {
		u += "?" + query
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the upstream URL %q is not usable: %w", redact.String(a.BaseURL), redact.Wrap(err))
	}
	for k, vs := range h {
		r.Header[k] = append([]string(nil), vs...)
	}
	if r.Header.Get("anthropic-version") == "" {
		r.Header.Set("anthropic-version", DefaultAnthropicVersion)
	}
	if a.APIKey != "" {
		r.Header.Set("x-api-key", a.APIKey)
	}
	r.Header.Set("content-type", "application/json")
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(r)
	if err != nil {
		return nil, upstreamUnreachable(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// upstreamUnreachable is the error of a request that got no answer.
func upstreamUnreachable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &APIError{Status: http.StatusInternalServerError, Type: APIErrorType,
		Message: "could not reach the upstream model API: " + redact.Error(err)}
}

// readAPIError reads an error response: the Messages API's error body when the upstream
// sent one, else an error made from the status.
func readAPIError(resp *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Type != "" {
		ae := ErrorFromType(e.Error.Type, redact.String(e.Error.Message))
		if resp.StatusCode >= 400 {
			ae.Status = resp.StatusCode
		}
		return ae
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return ErrorFromStatus(resp.StatusCode, "the upstream model API answered "+resp.Status+": "+redact.String(msg))
}

// send posts req, encoded with its members' bytes as they are, to /v1/messages.
func (a *Anthropic) send(ctx context.Context, req *Request, stream bool, h http.Header) (*http.Response, error) {
	out := a.request(req, stream)
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the upstream request: %w", err)
	}
	return a.post(ctx, "/v1/messages", out.RawQuery, b, h)
}

// Create implements Upstream.
func (a *Anthropic) Create(ctx context.Context, req *Request, h http.Header) (*Response, error) {
	resp, err := a.send(ctx, req, false, h)
	if err != nil {
		return nil, err
	}
	body, err := readAnswer(resp, maxAnswer(a.MaxAnswerBytes))
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream model API sent a response that is not a Messages API message: " + err.Error()}
	}
	return &r, nil
}

// Stream implements Upstream.
func (a *Anthropic) Stream(ctx context.Context, req *Request, h http.Header) (EventStream, error) {
	resp, err := a.send(ctx, req, true, h)
	if err != nil {
		return nil, err
	}
	body, err := boundBody(resp, maxAnswer(a.MaxAnswerBytes))
	if err != nil {
		return nil, err
	}
	return NewSSEReader(body), nil
}

// countTokensMembers are the members count_tokens accepts besides model, messages,
// system, tools and tool_choice, as the API's reference lists them. /v1/messages takes
// others (temperature, metadata, ...), which count_tokens rejects.
var countTokensMembers = map[string]bool{"thinking": true, "mcp_servers": true, "output_config": true,
	"output_format": true, "context_management": true, "speed": true, "cache_control": true}

// CountTokens implements Upstream. A request the Proxy decoded from a count_tokens body
// goes with all its members as they came; any other (a /v1/messages request given to
// Proxy.CountTokens) with only those count_tokens accepts.
func (a *Anthropic) CountTokens(ctx context.Context, req *Request, h http.Header) (int, error) {
	req = a.request(req, false)
	keep := func(k string) bool { return countTokensMembers[k] }
	if req.countTokens {
		keep = nil
	}
	b, err := req.countTokensJSON(keep)
	if err != nil {
		return 0, fmt.Errorf("encode the upstream request: %w", err)
	}
	resp, err := a.post(ctx, "/v1/messages/count_tokens", req.RawQuery, b, h)
	if err != nil {
		return 0, err
	}
	body, err := readAnswer(resp, maxAnswer(a.MaxAnswerBytes))
	if err != nil {
		return 0, err
	}
	var r struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.InputTokens == nil {
		return 0, &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream's count_tokens answer has no input_tokens"}
	}
	return *r.InputTokens, nil
}

// SSEReader reads server-sent events.
type SSEReader struct {
	body io.ReadCloser
	r    *bufio.Reader
}

// NewSSEReader reads the events of body, which it closes on Close.
func NewSSEReader(body io.ReadCloser) *SSEReader {
	return &SSEReader{body: body, r: bufio.NewReaderSize(body, 64<<10)}
}

// Next returns the next event with data, or io.EOF at the end of the stream. Comments
// and events without data are skipped; several data lines are joined by newlines. A
// read error other than io.EOF (such as a body over its bound) is returned as it is,
// never the part of a line read before it.
func (s *SSEReader) Next() (Event, error) {
	var ev Event
	var data []byte
	hasData := false
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return Event{}, err
		}
		if len(line) == 0 && err != nil {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			if errors.Is(err, io.EOF) {
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			ev = Event{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}

// Close closes the stream's body.
func (s *SSEReader) Close() error { return s.body.Close() }
