package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/internal/frontdoor"
)

// MaxRequestBytes is the largest request body the handler reads (32 MB, as the API).
const MaxRequestBytes = 32 << 20

// heldHeaders are the client headers an upstream never gets; it gets every other one
// as it came (anthropic-version, anthropic-beta, User-Agent, the client's X-Stainless-*
// and X-Claude-Code-Session-Id, ...), because they are the client's to send and the
// Anthropic API reads them. The OpenAI upstream sends none of the client's headers.
var heldHeaders = map[string]bool{
	// The client's credentials: the upstream gets the proxy's own key.
	"X-Api-Key": true, "Authorization": true, "Proxy-Authorization": true, "Cookie": true,
	// Hop-by-hop headers (RFC 9110, section 7.6.1) belong to the client's connection to
	// the proxy, as do the headers its Connection header names.
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	// The body's transport: toolshed sends a body of its own, and Go's client sets these
	// for it. Accept-Encoding is Go's, which asks for gzip and decompresses it; the
	// client's (br, zstd) would get an answer toolshed cannot read.
	"Host": true, "Content-Length": true, "Content-Type": true, "Content-Encoding": true,
	"Accept-Encoding": true, "Expect": true,
}

// Handler serves the Messages API: POST /v1/messages (JSON or, with "stream": true,
// server-sent events) and POST /v1/messages/count_tokens, and GET /healthz (200
// {"status":"ok"}, with no key). Errors are the API's error bodies with its status
// codes. An Anthropic upstream gets the request's query string and its headers but the
// client's credentials (x-api-key, Authorization, Proxy-Authorization, Cookie: the
// upstream has its own key), the hop-by-hop headers (Connection, the headers it names,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Connection) and those of
// the body's transport, which Go's client sets for the body toolshed sends (Host,
// Content-Length, Content-Type, Content-Encoding, Accept-Encoding, Expect).
//
// Before a request reaches the API, and before any key is checked, it must pass the
// checks of frontdoor.Guard: a loopback Host on a loopback connection (unless
// AllowHosts), no foreign browser origin (unless AllowOrigins), and a JSON body
// (415 otherwise): a web page must not be able to spend the upstream key.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", p.authorized(p.serveMessages))
	mux.HandleFunc("POST /v1/messages/count_tokens", p.authorized(p.serveCountTokens))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/", p.authorized(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &APIError{Status: http.StatusNotFound, Type: NotFound,
			Message: fmt.Sprintf("%s %s is not served here; toolshed proxy serves POST /v1/messages and POST /v1/messages/count_tokens", r.Method, r.URL.Path)})
	}))
	h, err := frontdoor.Guard(mux, frontdoor.Options{AllowHosts: p.AllowHosts, AllowOrigins: p.AllowOrigins, RequireJSON: true, Open: p.ClientKey == "",
		Deny: func(w http.ResponseWriter, _ *http.Request, status int, message string) {
			writeError(w, ErrorFromStatus(status, message))
		}})
	if err != nil && p.Logger != nil {
		p.Logger.Warn("ignoring allowed origins", "error", err)
	}
	return h
}

// authorized lets only requests with ClientKey through, when it is set: as x-api-key
// (the Anthropic SDKs' ANTHROPIC_API_KEY) or as a bearer token (ANTHROPIC_AUTH_TOKEN),
// whichever the client sends. Neither header goes upstream (see heldHeaders).
func (p *Proxy) authorized(h http.HandlerFunc) http.HandlerFunc {
	if p.ClientKey == "" {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		bearer, _ := frontdoor.Bearer(r)
		if !frontdoor.Equal(r.Header.Get("x-api-key"), p.ClientKey) && !frontdoor.Equal(bearer, p.ClientKey) {
			w.Header().Set("Connection", "close") // a refused client keeps no connection
			writeError(w, &APIError{Status: http.StatusUnauthorized, Type: Authentication,
				Message: "invalid x-api-key: send the key this proxy was started with (--token or $TOOLSHED_TOKEN) as the client's API key"})
			return
		}
		h(w, r)
	}
}

// bodies recycles request body buffers: a request with a thousand tools is a megabyte,
// and allocating one per request costs more than the rest of the proxy's work.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readRequest decodes a request body, or writes the error and returns nil. The request
// refers to the body's buffer: release must be called once the request is answered,
// and the request not used after.
func (p *Proxy) readRequest(w http.ResponseWriter, r *http.Request) (req *Request, release func()) {
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	release = func() {
		if buf.Cap() <= 4<<20 { // keep buffers up to 4 MB; larger ones are rare
			bodies.Put(buf)
		}
	}
	if r.ContentLength > 0 && r.ContentLength <= MaxRequestBytes {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &APIError{Status: http.StatusRequestEntityTooLarge, Type: TooLarge, Message: fmt.Sprintf("the request body is over %d bytes", MaxRequestBytes)})
		} else {
			writeError(w, invalid("could not read the request body: %v", err))
		}
		return nil, release
	}
	req, err = p.decodeRequest(body)
	if err != nil {
		writeError(w, invalid("the request body is not a valid Messages API request: %v", err))
		return nil, release
	}
	if req.Model == "" {
		writeError(w, invalid("model: Field required"))
		return nil, release
	}
	req.RawQuery = r.URL.RawQuery
	req.client = clientOf(r.Header.Get("x-api-key"), r.Header.Get("Authorization"))
	req.session = sessionOf(req.client, r.Header.Get("X-Claude-Code-Session-Id"))
	return req, release
}

// upstreamHeaders picks the client headers the upstream gets: all but heldHeaders and
// those the client's Connection header names.
func upstreamHeaders(r *http.Request) http.Header {
	hop := map[string]bool{}
	for _, v := range r.Header.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			hop[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	h := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		if heldHeaders[k] || hop[k] {
			continue
		}
		h[k] = append([]string(nil), vs...)
	}
	return h
}

func (p *Proxy) serveMessages(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, release := p.readRequest(w, r)
	defer release()
	if req == nil {
		return
	}
	if req.MaxTokens <= 0 {
		writeError(w, invalid("max_tokens: a positive number is required"))
		return
	}
	h := upstreamHeaders(r)
	if !req.Stream {
		resp, err := p.Create(r.Context(), req, h)
		p.log(r.Context(), req, start, err)
		if err != nil {
			writeError(w, asAPIError(err))
			return
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	flusher, _ := w.(http.Flusher)
	started := false
	err := p.Stream(r.Context(), req, h, func(ev Event) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Name, ev.Data); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	p.log(r.Context(), req, start, err)
	if err != nil && !started {
		writeError(w, asAPIError(err))
	}
}

func (p *Proxy) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	req, release := p.readRequest(w, r)
	defer release()
	if req == nil {
		return
	}
	req.countTokens = true
	n, err := p.CountTokens(r.Context(), req, upstreamHeaders(r))
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
}

// log writes one line about a request: never its content or any key.
func (p *Proxy) log(ctx context.Context, req *Request, start time.Time, err error) {
	if p.Logger == nil {
		return
	}
	attrs := []any{"model", req.Model, "stream", req.Stream, "tools", len(req.Tools), "ms", time.Since(start).Milliseconds()}
	if err != nil {
		ae := asAPIError(err)
		p.Logger.WarnContext(ctx, "messages request failed", append(attrs, "status", ae.Status, "error", ae.Type, "message", ae.Message)...)
		return
	}
	p.Logger.InfoContext(ctx, "messages request", attrs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "could not encode the response: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(errorBody(e))
}
