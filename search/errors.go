package search

import "fmt"

// Code classifies a search failure the way Anthropic's tool search does, so that every
// front can hand it to a model or client unchanged and the caller knows what to do next.
type Code string

// The error codes of Anthropic's tool_search_tool_result_error.
const (
	// InvalidToolInput: the query or pattern is bad; fix it and retry at once.
	InvalidToolInput Code = "invalid_tool_input"
	// Unavailable: the search backend is down or timed out; retry with backoff.
	Unavailable Code = "unavailable"
	// TooManyRequests: rate limited; slow down.
	TooManyRequests Code = "too_many_requests"
	// ExecutionTimeExceeded: the search took too long; retry with backoff, or narrow it.
	ExecutionTimeExceeded Code = "execution_time_exceeded"
)

// Error is a search failure with its code and a message that says what to do.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is makes errors.Is(err, &Error{Code: c}) match any error of code c, and the package's
// sentinels match by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidToolInput      = &Error{Code: InvalidToolInput}
	ErrUnavailable           = &Error{Code: Unavailable}
	ErrTooManyRequests       = &Error{Code: TooManyRequests}
	ErrExecutionTimeExceeded = &Error{Code: ExecutionTimeExceeded}
)

// Errorf returns an *Error of code c.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}
