package messages

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image sizes for CountTokens
	_ "image/jpeg" // image sizes for CountTokens
	_ "image/png"  // image sizes for CountTokens
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/tokens"
)

// OpenAI is an Upstream speaking the Chat Completions API: OpenAI itself, vLLM, Ollama,
// the llama.cpp server and the many servers that copy it.
//
// The translation both ways is done by ToOpenAI, FromOpenAI, NewOpenAIStream and
// OpenAIError; see them for what maps to what and what is dropped. None of the client's
// headers are forwarded (the anthropic-* headers and the client's key mean nothing
// upstream): requests carry Content-Type, Accept and, when APIKey is set,
// Authorization: Bearer.
//
// max_tokens goes out as max_completion_tokens (what OpenAI wants, and the only one its
// reasoning models accept) and also as max_tokens (what Ollama, older llama.cpp and
// LM Studio read; they ignore max_completion_tokens). To OpenAI's own API
// (api.openai.com, *.openai.azure.com) only max_completion_tokens is sent, and any
// server that answers 400 "unsupported parameter max_tokens" is asked again at once
// without it, and from then on.
type OpenAI struct {
	BaseURL string       // e.g. http://localhost:11434/v1 (empty means DefaultOpenAIURL); requests go to BaseURL + "/chat/completions"
	APIKey  string       // sent as Authorization: Bearer; may be empty (local servers)
	Client  *http.Client // nil means http.DefaultClient
	// Model, when set, replaces the request's model (clients send Claude model names).
	Model string
	// MaxAnswerBytes bounds what is read of one answer, as Anthropic.MaxAnswerBytes
	// does. Zero means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64

	// noMaxTokens is set once the upstream rejected max_tokens.
	noMaxTokens atomic.Bool
}

var _ Upstream = (*OpenAI)(nil)

// DefaultOpenAIURL is OpenAI's API.
const DefaultOpenAIURL = "https://api.openai.com/v1"

func (o *OpenAI) baseURL() string {
	if o.BaseURL == "" {
		return DefaultOpenAIURL
	}
	return strings.TrimRight(o.BaseURL, "/")
}

// Create sends the request to /chat/completions without streaming and translates the
// answer with FromOpenAI. The response carries the request's model name, not the
// upstream's.
func (o *OpenAI) Create(ctx context.Context, req *Request, h http.Header) (*Response, error) {
	r := *req
	r.Stream = false
	resp, err := o.post(ctx, &r)
	if err != nil {
		return nil, err
	}
	return o.completion(resp, req.Model)
}

// completion reads and translates a whole chat.completion answer.
func (o *OpenAI) completion(resp *http.Response, model string) (*Response, error) {
	body, err := readAnswer(resp, maxAnswer(o.MaxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("openai upstream: reading response: %w", err)
	}
	out, err := FromOpenAI(body, model)
	if err != nil {
		return nil, o.redactErr(err)
	}
	return out, nil
}

// Stream sends the request with stream: true (and stream_options.include_usage) and
// translates the chunks with NewOpenAIStream. A server that answers with a whole
// chat.completion instead of a stream is translated too, into the events the API would
// have sent for that response.
func (o *OpenAI) Stream(ctx context.Context, req *Request, h http.Header) (EventStream, error) {
	r := *req
	r.Stream = true
	resp, err := o.post(ctx, &r)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		out, err := o.completion(resp, req.Model)
		if err != nil {
			return nil, err
		}
		return &oaEventList{events: oaResponseEvents(out)}, nil
	}
	body, err := boundBody(resp, maxAnswer(o.MaxAnswerBytes))
	if err != nil {
		return nil, err
	}
	return NewOpenAIStream(body, req.Model), nil
}

// CountTokens counts locally: Chat Completions has no token counting endpoint. It is
// tokens.Count (o200k_base) of the JSON of the translated request's messages plus that of
// its tools, with each image counted as the API prices it (width×height/750 tokens after
// scaling to at most 1568 px and 1.15 megapixels; 1,600 when its size cannot be read, as
// for URL images) instead of as the text of its data: URL.
func (o *OpenAI) CountTokens(ctx context.Context, req *Request, h http.Header) (int, error) {
	oreq, err := toOAIRequest(req, o.model(req))
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range oreq.Messages {
		parts, ok := oreq.Messages[i].Content.([]any)
		if !ok {
			continue
		}
		counted := make([]any, len(parts))
		for j, p := range parts {
			if img, ok := p.(oaImagePart); ok {
				n += oaImageTokens(img.ImageURL.URL)
				p = oaImagePart{Type: img.Type, ImageURL: oaImageURL{URL: "image"}}
			}
			counted[j] = p
		}
		oreq.Messages[i].Content = counted
	}
	msgs, err := oaMarshal(oreq.Messages)
	if err != nil {
		return 0, err
	}
	n += tokens.Count(string(msgs))
	if len(oreq.Tools) > 0 {
		tools, err := oaMarshal(oreq.Tools)
		if err != nil {
			return 0, err
		}
		n += tokens.Count(string(tools))
	}
	return n, nil
}

// oaImageTokens estimates an image's cost the way Anthropic documents it.
func oaImageTokens(u string) int {
	const unknown = 1600
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return unknown
	}
	_, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return unknown
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return unknown
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if m := max(w, h); m > 1568 {
		w, h = w*1568/m, h*1568/m
	}
	if px := w * h; px > 1_150_000 {
		s := math.Sqrt(1_150_000 / px)
		w, h = w*s, h*s
	}
	return min(int((w*h+749)/750), unknown)
}

func (o *OpenAI) model(req *Request) string {
	if o.Model != "" {
		return o.Model
	}
	return req.Model
}

// sendsMaxTokens reports whether the legacy max_tokens goes out beside
// max_completion_tokens.
func (o *OpenAI) sendsMaxTokens() bool {
	if o.noMaxTokens.Load() {
		return false
	}
	u, err := url.Parse(o.baseURL())
	if err != nil {
		return true
	}
	host := strings.ToLower(u.Hostname())
	return host != "api.openai.com" && !strings.HasSuffix(host, ".openai.azure.com")
}

// post sends req and returns a 2xx answer; any other status is an *APIError.
func (o *OpenAI) post(ctx context.Context, req *Request) (*http.Response, error) {
	oreq, err := toOAIRequest(req, o.model(req))
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if !o.sendsMaxTokens() {
			oreq.MaxTokens = 0
		}
		body, err := oaMarshal(oreq)
		if err != nil {
			return nil, err
		}
		resp, err := o.do(ctx, body, req.Stream)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if attempt == 0 && oreq.MaxTokens != 0 && oaRejectsMaxTokens(resp.StatusCode, data) {
			o.noMaxTokens.Store(true)
			continue
		}
		return nil, o.redact(OpenAIError(resp.StatusCode, data))
	}
}

func (o *OpenAI) do(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.baseURL()+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai upstream: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if o.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	c := o.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(hreq)
	if err != nil {
		// url.Error names the URL, never the key; keep the chain for errors.Is.
		return nil, fmt.Errorf("openai upstream: %w", err)
	}
	return resp, nil
}

// oaRejectsMaxTokens recognizes OpenAI's answer to max_tokens on models that only take
// max_completion_tokens.
func oaRejectsMaxTokens(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	e, ok := parseOpenAIError(body)
	if !ok {
		return false
	}
	return e.Param == "max_tokens" || (strings.Contains(e.Message, "max_tokens") && strings.Contains(e.Message, "max_completion_tokens"))
}

// redact removes the configured key from an error message, should an upstream echo it
// in a shape redact.String does not know.
func (o *OpenAI) redact(e *APIError) *APIError {
	if len(o.APIKey) >= 4 {
		e.Message = strings.ReplaceAll(e.Message, o.APIKey, redact.Mask)
	}
	return e
}

func (o *OpenAI) redactErr(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		o.redact(ae)
	}
	return err
}

// oaMarshal encodes v as JSON without escaping HTML characters (which OpenAI-compatible
// servers read either way) and without the trailing newline.
func oaMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
