package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolshed/toolshed/internal/redact"
)

// The error answers of OpenAI-compatible servers, as Messages API errors.

type oaErrorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   string          `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// parseOpenAIError reads the error bodies of OpenAI and its imitators:
// {"error":{"message","type","param","code"}} (OpenAI, Ollama, llama.cpp, vLLM),
// {"error":"message"}, {"object":"error","message",...} (older vLLM) and FastAPI's
// {"detail": "..." or [{"loc","msg"}]}.
func parseOpenAIError(body []byte) (oaErrorObject, bool) {
	var w struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
		oaErrorObject
	}
	if json.Unmarshal(body, &w) != nil {
		return oaErrorObject{}, false
	}
	if e := bytes.TrimSpace(w.Error); len(e) > 0 && string(e) != "null" {
		if e[0] == '"' {
			return oaErrorObject{Message: oaString(e)}, true
		}
		var o oaErrorObject
		if json.Unmarshal(e, &o) == nil && o.Message != "" {
			return o, true
		}
	}
	if w.Message != "" {
		return w.oaErrorObject, true
	}
	if d := bytes.TrimSpace(w.Detail); len(d) > 0 {
		if d[0] == '"' {
			return oaErrorObject{Message: oaString(d)}, true
		}
		var items []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		}
		if json.Unmarshal(d, &items) == nil && len(items) > 0 {
			var msgs []string
			for _, it := range items {
				var loc []string
				for _, l := range it.Loc {
					loc = append(loc, fmt.Sprint(l))
				}
				msgs = append(msgs, strings.Join(loc, ".")+": "+it.Msg)
			}
			return oaErrorObject{Message: strings.Join(msgs, "; ")}, true
		}
	}
	return oaErrorObject{}, false
}

// OpenAIError maps an upstream error answer to the Messages API error of its status
// (ErrorFromStatus: 400 and 422 invalid_request_error, 401 authentication_error, 403
// permission_error, 404 not_found_error, 429 rate_limit_error, 503 overloaded_error, other
// 5xx api_error). The message is the upstream's own, from any of the error shapes
// parseOpenAIError knows, else the body's text, else the status text, with anything that
// looks like an API key (OpenAI's 401 quotes a masked key) hidden by redact.String.
func OpenAIError(status int, body []byte) *APIError {
	msg := ""
	if e, ok := parseOpenAIError(body); ok {
		msg = e.Message
	} else if t := strings.TrimSpace(string(body)); t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "{") {
		msg = t
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = "upstream error " + strconv.Itoa(status)
		}
	}
	return ErrorFromStatus(status, redact.String(msg))
}

// oaErrorInBody maps an error sent with a 200 status (in a body or mid-stream) to an
// APIError, taking the status from its code, else from its type.
func oaErrorInBody(body []byte) *APIError {
	e, _ := parseOpenAIError(body)
	status := http.StatusInternalServerError
	code := strings.Trim(string(e.Code), `"`)
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		status = n
	} else {
		switch strings.ToLower(e.Type) {
		case "invalid_request_error", "badrequesterror", "invalid_request":
			status = http.StatusBadRequest
		case "authentication_error", "authenticationerror":
			status = http.StatusUnauthorized
		case "permission_error", "permissiondeniederror":
			status = http.StatusForbidden
		case "not_found_error", "notfounderror":
			status = http.StatusNotFound
		case "rate_limit_error", "ratelimiterror", "insufficient_quota", "tokens":
			status = http.StatusTooManyRequests
		case "overloaded_error", "server_overloaded":
			status = http.StatusServiceUnavailable
		}
	}
	if e.Message == "" {
		e.Message = "the upstream model reported an error"
	}
	return ErrorFromStatus(status, redact.String(e.Message))
}
