// Package embed turns text into vectors with the user's own embedding model, served
// over HTTP in the OpenAI /v1/embeddings format (OpenAI, vLLM, text-embeddings-inference,
// LM Studio, llama.cpp, Ollama's /v1) or Ollama's native /api/embed. toolshed ships no
// model: it uses the one the user already runs, and search falls back to words when the
// endpoint is away (see package hybrid).
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/redact"
)

// APIKeyEnv is the environment variable an endpoint's key is read from, so that the key
// never appears on a command line or in a config file.
const APIKeyEnv = "TOOLSHED_EMBED_API_KEY"

// Defaults for the zero values of Options.
const (
	DefaultTimeout     = 60 * time.Second
	DefaultBatchSize   = 64
	DefaultConcurrency = 2
	// maxResponse bounds an endpoint's answer: 64 MiB holds a batch of 512 vectors of
	// 8,192 dimensions written out as JSON numbers, far more than any batch sent.
	maxResponse = 64 << 20
	// MaxDimensions is the most dimensions a vector may have. The largest embedding
	// models in use give 4,096 (3,072 for OpenAI's text-embedding-3-large); a vector
	// costs 1.125 bytes a dimension in memory and in the cache, so 8,192 dimensions over
	// 10,000 tools is 92 MB, while an endpoint's 131,072 would be 1.5 GB. A longer vector
	// is refused as a bad response, and search uses words.
	MaxDimensions = 8192
)

// Errors a Client's calls wrap with %w, so that callers can tell a misconfiguration
// (fix the flags) from an endpoint that is away (fall back and retry later).
var (
	// ErrConfig: the options cannot work (no URL, no model, a URL that is not http).
	ErrConfig = errors.New("embed: bad configuration")
	// ErrUnavailable: the endpoint could not be reached, or answered with an HTTP error.
	ErrUnavailable = errors.New("embed: endpoint unavailable")
	// ErrTimeout: the endpoint did not answer in time.
	ErrTimeout = errors.New("embed: endpoint timed out")
	// ErrBadResponse: the endpoint answered 200 with something that is not the vectors
	// asked for (not JSON, the wrong count, the wrong or a changing dimension, more than
	// MaxDimensions, NaN), or redirected to another origin.
	ErrBadResponse = errors.New("embed: bad response")
	// ErrRejected: the endpoint refused the texts themselves (HTTP 400, 413 or 422: a
	// text longer than the model takes, say). It comes with ErrUnavailable; Build then
	// embeds the other texts and leaves those it refuses to words alone.
	ErrRejected = errors.New("embed: the endpoint refused the input")
)

// rejectedError is an ErrUnavailable error that is also ErrRejected, with
// ErrUnavailable's message.
type rejectedError struct{ error }

func (e rejectedError) Unwrap() error        { return e.error }
func (e rejectedError) Is(target error) bool { return target == ErrRejected }

// Format is an endpoint's wire format.
type Format string

const (
	// FormatOpenAI is POST {"model", "input": [...]} answered by {"data": [{"index",
	// "embedding"}]}: OpenAI's /v1/embeddings, which most servers speak.
	FormatOpenAI Format = "openai"
	// FormatOllama is POST {"model", "input": [...]} answered by {"embeddings": [[...]]}:
	// Ollama's /api/embed.
	FormatOllama Format = "ollama"
)

// Options configure a Client. Only URL and Model are required.
type Options struct {
	// URL is the endpoint: a full path such as http://localhost:11434/api/embed or
	// http://localhost:8000/v1/embeddings, or a base ending in /v1, to which /embeddings
	// is added.
	URL string
	// Model is the model name the endpoint expects.
	Model string
	// Format is the wire format; empty means FormatOllama for a path ending in /api/embed
	// and FormatOpenAI otherwise.
	Format Format
	// APIKey is sent as a bearer token; empty means the value of TOOLSHED_EMBED_API_KEY,
	// and no Authorization header when that is empty too.
	APIKey string
	// Dimensions, when positive, asks the model for vectors of that size (OpenAI's
	// text-embedding-3 and Matryoshka models shorten their vectors) and is checked
	// against what comes back. Zero takes the model's own size.
	Dimensions int
	// QueryPrefix and DocumentPrefix are put before queries and tool texts: models such
	// as nomic-embed-text ("search_query: ", "search_document: ") and e5 ("query: ",
	// "passage: ") were trained with them and rank worse without.
	QueryPrefix    string
	DocumentPrefix string
	// Timeout bounds one request; zero means DefaultTimeout. A query's embedding has a
	// far shorter bound of its own (see hybrid.Options.QueryTimeout).
	Timeout time.Duration
	// BatchSize is the most texts sent in one request; zero means DefaultBatchSize.
	BatchSize int
	// Concurrency is the most requests in flight at once; zero means
	// DefaultConcurrency. A local model gains nothing from more than its cores.
	Concurrency int
	// HTTPClient sends the requests; nil means a client of its own.
	HTTPClient *http.Client
}

// Client calls one embeddings endpoint. It is safe for concurrent use.
type Client struct {
	opts     Options
	endpoint string
	// shown is the endpoint as messages show it: without the password a URL may
	// carry (https://user:KEY@host/...), which is a key.
	shown  string
	format Format
	http   *http.Client
}

// New checks opts and returns a Client. It sends nothing: an endpoint that is down is
// found on the first call, so that a search can start without it.
func New(opts Options) (*Client, error) {
	if opts.URL == "" {
		return nil, fmt.Errorf("%w: no endpoint URL; give one such as http://localhost:11434/api/embed (Ollama) or http://localhost:8000/v1/embeddings (OpenAI format)", ErrConfig)
	}
	if opts.Model == "" {
		return nil, fmt.Errorf("%w: no model name for %s; give the embedding model the endpoint serves, such as nomic-embed-text", ErrConfig, redact.String(opts.URL))
	}
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: endpoint %q is not an http(s) URL such as http://localhost:11434/api/embed", ErrConfig, redact.String(opts.URL))
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		u.Path = strings.TrimRight(u.Path, "/") + "/embeddings"
	}
	format := opts.Format
	switch format {
	case "":
		format = FormatOpenAI
		if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/api/embed") {
			format = FormatOllama
		}
	case FormatOpenAI, FormatOllama:
	default:
		return nil, fmt.Errorf("%w: unknown format %q; use %q or %q", ErrConfig, format, FormatOpenAI, FormatOllama)
	}
	if opts.Dimensions < 0 || opts.Dimensions > MaxDimensions {
		return nil, fmt.Errorf("%w: dimensions must be from 1 to %d, or 0 (the model's own), got %d", ErrConfig, MaxDimensions, opts.Dimensions)
	}
	if opts.APIKey == "" {
		opts.APIKey = os.Getenv(APIKeyEnv)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		copied := *opts.HTTPClient
		hc = &copied
	}
	hc.CheckRedirect = sameOrigin(hc.CheckRedirect)
	return &Client{opts: opts, endpoint: u.String(), shown: redact.String(u.String()), format: format, http: hc}, nil
}

// errOtherOrigin is what a redirect to another origin fails with.
var errOtherOrigin = errors.New("redirected to another origin")

// sameOrigin is a CheckRedirect that follows a redirect only to the origin (scheme,
// host and port) of the first request, then asks next, if any. A request carries the
// tool texts or the query and, for a redirect to the same host name, Go's client sends
// the bearer key along even to another port: an endpoint that moved is given as the
// new URL, not followed.
func sameOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if !strings.EqualFold(req.URL.Scheme, from.Scheme) || !strings.EqualFold(canonicalHost(req.URL), canonicalHost(from)) {
			return fmt.Errorf("%w: %s; give that URL as the endpoint if it is the one meant", errOtherOrigin, redact.String(req.URL.String()))
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// canonicalHost is a URL's host and port, with the scheme's default port filled in.
func canonicalHost(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return u.Hostname() + ":" + port
}

// Options returns the client's options with defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Endpoint is the URL requests go to, as messages show it: without a password it
// carries.
func (c *Client) Endpoint() string { return c.shown }

// Format is the wire format the client speaks.
func (c *Client) Format() Format { return c.format }

// Query embeds one search query, with the query prefix.
func (c *Client) Query(ctx context.Context, q string) ([]float32, error) {
	v, err := c.call(ctx, []string{c.opts.QueryPrefix + q})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// Documents embeds texts with the document prefix in one request; callers batch (see
// Build).
func (c *Client) Documents(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = c.opts.DocumentPrefix + t
	}
	return c.call(ctx, in)
}

// request is both formats' request body: they share "model" and "input". "dimensions"
// is OpenAI's field and, since Ollama 0.11, Ollama's too.
type request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
	// EncodingFormat asks OpenAI-format servers for JSON numbers rather than base64.
	EncodingFormat string `json:"encoding_format,omitempty"`
}

type openAIResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

type ollamaResponse struct {
	Embeddings [][]float64 `json:"embeddings"`
}

func (c *Client) call(ctx context.Context, input []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	body := request{Model: c.opts.Model, Input: input, Dimensions: c.opts.Dimensions}
	if c.format == FormatOpenAI {
		body.EncodingFormat = "float"
	}
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s gave no answer within its timeout", ErrTimeout, c.shown)
		}
		if errors.Is(err, errOtherOrigin) {
			return nil, fmt.Errorf("%w: %s %v", ErrBadResponse, c.shown, redact.Error(errors.Unwrap(err)))
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, c.shown, redact.Error(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%w: %s stopped answering within its timeout", ErrTimeout, c.shown)
		}
		return nil, fmt.Errorf("%w: %s: reading the answer: %s", ErrUnavailable, c.shown, redact.Error(err))
	}
	if resp.StatusCode != http.StatusOK {
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			return nil, rejectedError{fmt.Errorf("%w: %s answered %s: %s", ErrUnavailable, c.shown, resp.Status, redact.String(errorMessage(raw)))}
		}
		return nil, fmt.Errorf("%w: %s answered %s: %s", ErrUnavailable, c.shown, resp.Status, redact.String(errorMessage(raw)))
	}
	if len(raw) > maxResponse {
		return nil, fmt.Errorf("%w: %s answered more than %d MiB", ErrBadResponse, c.shown, maxResponse>>20)
	}
	vecs, err := c.decode(raw, len(input))
	if err != nil {
		return nil, fmt.Errorf("%w: %s (model %s, %s format): %v", ErrBadResponse, c.shown, c.opts.Model, c.format, err)
	}
	return vecs, nil
}

// decode reads n vectors from an answer and checks them: all of one dimension (the
// asked one, if any), finite and not all zero, since a zero vector has no direction.
func (c *Client) decode(raw []byte, n int) ([][]float32, error) {
	var got [][]float64
	switch c.format {
	case FormatOllama:
		var r ollamaResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("not an /api/embed answer: %v", err)
		}
		got = r.Embeddings
	default:
		var r openAIResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("not a /v1/embeddings answer: %v", err)
		}
		got = make([][]float64, len(r.Data))
		for _, d := range r.Data {
			if d.Index < 0 || d.Index >= len(got) || got[d.Index] != nil {
				return nil, fmt.Errorf("embedding index %d is out of range or repeated", d.Index)
			}
			got[d.Index] = d.Embedding
		}
	}
	if len(got) != n {
		return nil, fmt.Errorf("%d vectors for %d inputs", len(got), n)
	}
	dim := c.opts.Dimensions
	out := make([][]float32, n)
	for i, v := range got {
		if len(v) == 0 {
			return nil, fmt.Errorf("vector %d is empty", i)
		}
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim {
			return nil, fmt.Errorf("vector %d has %d dimensions, want %d", i, len(v), dim)
		}
		if dim > MaxDimensions {
			return nil, fmt.Errorf("vector %d has %d dimensions, more than the %d toolshed keeps (a vector costs about a byte a dimension for every tool); ask the model for fewer (--embed-dimensions) or use another", i, dim, MaxDimensions)
		}
		f := make([]float32, len(v))
		nonzero := false
		for j, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
				return nil, fmt.Errorf("vector %d holds %v", i, x)
			}
			f[j] = float32(x)
			nonzero = nonzero || f[j] != 0
		}
		if !nonzero {
			return nil, fmt.Errorf("vector %d is all zeros", i)
		}
		out[i] = f
	}
	return out, nil
}

// errorMessage is the readable part of an error answer: OpenAI's {"error": {"message"}},
// Ollama's {"error": "..."}, else the start of the body.
func errorMessage(raw []byte) string {
	var oa struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &oa) == nil && len(oa.Error) > 0 {
		var s string
		if json.Unmarshal(oa.Error, &s) == nil {
			return s
		}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(oa.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
