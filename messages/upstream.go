package messages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Upstream is a model API that answers Messages API requests. The request it gets is
// already rendered for it: only tools the model may see, the search tool as an ordinary
// custom tool, and no tool search blocks in the history. Implementations translate to
// their own wire format as needed.
type Upstream interface {
	// Create answers a request in one response.
	Create(ctx context.Context, req *Request, h http.Header) (*Response, error)
	// Stream answers a request as Messages API server-sent events (message_start,
	// content_block_start, content_block_delta, content_block_stop, message_delta,
	// message_stop, ping), read one at a time until io.EOF.
	Stream(ctx context.Context, req *Request, h http.Header) (EventStream, error)
	// CountTokens counts the input tokens of a request.
	CountTokens(ctx context.Context, req *Request, h http.Header) (int, error)
}

// EventStream is a stream of server-sent events.
type EventStream interface {
	// Next returns the next event, or io.EOF after the last.
	Next() (Event, error)
	Close() error
}

// APIError is an error with the Messages API's shape: an HTTP status and an error type
// such as invalid_request_error. Upstream errors are mapped to it so that clients get
// the error bodies and status codes the Anthropic API would give.
type APIError struct {
	Status  int
	Type    string
	Message string

	emitted bool  // a stream already sent it to the client as an error event
	cause   error // a sentinel it stands for, such as ErrAnswerTooLarge; may be nil
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

// Unwrap returns the sentinel error the APIError stands for, if any.
func (e *APIError) Unwrap() error { return e.cause }

// Error types of the Messages API and their statuses.
const (
	InvalidRequest = "invalid_request_error" // 400
	Authentication = "authentication_error"  // 401
	Permission     = "permission_error"      // 403
	NotFound       = "not_found_error"       // 404
	TooLarge       = "request_too_large"     // 413
	RateLimit      = "rate_limit_error"      // 429
	APIErrorType   = "api_error"             // 500
	Overloaded     = "overloaded_error"      // 529
)

// ErrorFromStatus builds the APIError of an HTTP status from an upstream.
func ErrorFromStatus(status int, message string) *APIError {
	t := APIErrorType
	switch {
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		t, status = InvalidRequest, http.StatusBadRequest
	case status == http.StatusUnauthorized:
		t = Authentication
	case status == http.StatusForbidden:
		t = Permission
	case status == http.StatusNotFound:
		t = NotFound
	case status == http.StatusRequestEntityTooLarge:
		t = TooLarge
	case status == http.StatusTooManyRequests:
		t = RateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		t, status = Overloaded, 529
	case status >= 500:
		t, status = APIErrorType, http.StatusInternalServerError
	case status >= 400:
		t = InvalidRequest
	}
	return &APIError{Status: status, Type: t, Message: message}
}

// invalid returns a 400 invalid_request_error.
func invalid(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: InvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// asAPIError turns any error into an APIError: upstream transport failures are 529
// overloaded_error (the client should retry later), anything else a 500.
func asAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &APIError{Status: 529, Type: Overloaded, Message: "the upstream model did not answer in time; retry with backoff"}
	}
	return &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: err.Error()}
}

// ErrorFromType builds the APIError of an error type the Messages API names, with its
// status.
func ErrorFromType(typ, message string) *APIError {
	status := map[string]int{
		InvalidRequest: http.StatusBadRequest, Authentication: http.StatusUnauthorized,
		Permission: http.StatusForbidden, NotFound: http.StatusNotFound, TooLarge: http.StatusRequestEntityTooLarge,
		RateLimit: http.StatusTooManyRequests, Overloaded: 529,
	}[typ]
	if status == 0 {
		typ, status = APIErrorType, http.StatusInternalServerError
	}
	return &APIError{Status: status, Type: typ, Message: message}
}
