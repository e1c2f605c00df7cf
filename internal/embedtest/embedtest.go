// Package embedtest serves embeddings for tests: OpenAI's POST /v1/embeddings and
// Ollama's POST /api/embed, with the request and answer JSON the real APIs document,
// from a deterministic model. No model can be downloaded here, so the model is a hashed
// bag of words whose synonyms share a word (Synonyms): enough to prove that a query
// finds a tool it shares no word with, never a claim about a real model's quality.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Dim is the model's dimension when a request asks for none.
const Dim = 64

// Model is the model name the server knows; others get the APIs' "not found" errors.
const Model = "test-embed"

// Synonyms maps words to the word the model reads them as: its whole "understanding".
var Synonyms = map[string]string{
	"photo": "image", "picture": "image", "snapshot": "image", "screenshot": "image", "selfie": "image",
	"capture": "take", "grab": "take", "snap": "take",
	"weather": "forecast", "climate": "forecast", "rain": "forecast",
	"mail": "email", "message": "email", "inbox": "email",
}

// Vector is the model: each word (lowercased, read through Synonyms) adds ±1 to one of
// dim components chosen by its FNV hash, and the sum is normalized.
func Vector(text string, dim int) []float64 {
	v := make([]float64, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if s, ok := Synonyms[w]; ok {
			w = s
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[int(x%uint64(dim))] += sign
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n == 0 {
		v[0] = 1 // a text of no words still has a direction, as real models give
		return v
	}
	for i := range v {
		v[i] /= math.Sqrt(n)
	}
	return v
}

// Mode is how the server misbehaves.
type Mode int

const (
	Normal      Mode = iota
	Slow             // waits Delay before answering
	SlowPerText      // waits Delay for each text of the request before answering, as a model on a CPU does
	Garbage          // answers 200 with a body that is not embeddings
	Error            // answers 500
)

// Server is a running embeddings server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	mode     Mode
	delay    time.Duration
	requests []Request
	maxWords int
}

// SetMaxWords makes the server refuse a request with a text longer than n words, as
// OpenAI's API refuses one past the model's context (400, "This model's maximum
// context length is ..."); 0 accepts any length.
func (s *Server) SetMaxWords(n int) {
	s.mu.Lock()
	s.maxWords = n
	s.mu.Unlock()
}

// Request is what the server received: the path, the Authorization header and the
// decoded body.
type Request struct {
	Path          string
	Authorization string
	Model         string
	Input         []string
	Dimensions    int
	Raw           string
}

// Start starts a server; close it with Close.
func Start() *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, false) })
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, true) })
	s.Server = httptest.NewServer(mux)
	return s
}

// SetMode changes how the server answers from now on; delay is Slow's wait.
func (s *Server) SetMode(m Mode, delay time.Duration) {
	s.mu.Lock()
	s.mode, s.delay = m, delay
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Inputs is the number of texts embedded so far.
func (s *Server) Inputs() int {
	n := 0
	for _, r := range s.Requests() {
		n += len(r.Input)
	}
	return n
}

// Reset forgets the requests received.
func (s *Server) Reset() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, ollama bool) {
	var body struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
	}
	raw, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	mode, delay, maxWords := s.mode, s.delay, s.maxWords
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		if ollama {
			// Ollama: {"error": "..."}
			json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
		// OpenAI: {"error": {"message", "type", "param", "code"}}
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		fail(http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	var input []string
	var one string
	if json.Unmarshal(body.Input, &one) == nil {
		input = []string{one}
	} else if err := json.Unmarshal(body.Input, &input); err != nil {
		fail(http.StatusBadRequest, "'input' must be a string or an array of strings")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
		Model: body.Model, Input: input, Dimensions: body.Dimensions, Raw: string(raw)})
	s.mu.Unlock()
	if mode == SlowPerText {
		mode, delay = Slow, delay*time.Duration(len(input))
	}
	switch mode {
	case Slow:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	case Garbage:
		w.Write([]byte(`<html><body>502 Bad Gateway</body></html>`))
		return
	case Error:
		fail(http.StatusInternalServerError, "the model crashed")
		return
	}
	if body.Model != Model {
		if ollama {
			fail(http.StatusNotFound, `model "`+body.Model+`" not found, try pulling it first`)
		} else {
			fail(http.StatusNotFound, "The model `"+body.Model+"` does not exist or you do not have access to it.")
		}
		return
	}
	if len(input) == 0 {
		fail(http.StatusBadRequest, "'input' is empty")
		return
	}
	for _, t := range input {
		if n := len(strings.Fields(t)); maxWords > 0 && n > maxWords {
			fail(http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens (%d in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", maxWords, n, n))
			return
		}
	}
	dim := Dim
	if body.Dimensions > 0 {
		dim = body.Dimensions
	}
	vecs := make([][]float64, len(input))
	tokens := 0
	for i, t := range input {
		vecs[i] = Vector(t, dim)
		tokens += len(strings.Fields(t))
	}
	if ollama {
		// https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings
		json.NewEncoder(w).Encode(struct {
			Model           string      `json:"model"`
			Embeddings      [][]float64 `json:"embeddings"`
			TotalDuration   int64       `json:"total_duration"`
			LoadDuration    int64       `json:"load_duration"`
			PromptEvalCount int         `json:"prompt_eval_count"`
		}{body.Model, vecs, 14143917, 1019500, tokens})
		return
	}
	// https://platform.openai.com/docs/api-reference/embeddings/object
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]datum, len(vecs))
	for i, v := range vecs {
		data[i] = datum{"embedding", i, v}
	}
	json.NewEncoder(w).Encode(struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: data, Model: body.Model, Usage: struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}{tokens, tokens}})
}
