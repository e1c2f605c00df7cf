package toolsearch

import (
	"math/rand/v2"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolshed/toolshed/search"
)

// RetryPolicy says whether and when to retry a tool search that failed with an error
// code of tool_search_tool_result_error (or of toolshed's own search, search.Code):
//
//   - invalid_tool_input: fix the query (see CheckQuery and Truncate) and retry at once,
//     within the first MaxFixes tries;
//   - unavailable and execution_time_exceeded: retry with exponential backoff,
//     BaseDelay·2^attempt capped at MaxDelay;
//   - too_many_requests: slow down, with a backoff SlowDown times as long;
//   - anything else: do not retry.
//
// No code is retried once MaxAttempts tries have been made. A zero field takes its value
// from DefaultRetryPolicy, so the zero RetryPolicy is usable; Jitter nil means none.
type RetryPolicy struct {
	// MaxAttempts is the most tries of one search, the first included.
	MaxAttempts int
	// MaxFixes is the most retries after invalid_tool_input (see Next).
	MaxFixes int
	// BaseDelay is the first backoff delay, and MaxDelay the longest.
	BaseDelay, MaxDelay time.Duration
	// SlowDown multiplies the backoff after too_many_requests.
	SlowDown int
	// Jitter, when set, perturbs each backoff delay (for instance EqualJitter); the
	// result is kept between 0 and MaxDelay. Tests inject a deterministic one.
	Jitter func(time.Duration) time.Duration
}

// DefaultRetryPolicy is the policy a zero field falls back to: 4 tries, 2 fixes, backoff
// from 500ms to 30s, 4× slower after too_many_requests, no jitter.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts: 4,
	MaxFixes:    2,
	BaseDelay:   500 * time.Millisecond,
	MaxDelay:    30 * time.Second,
	SlowDown:    4,
}

// withDefaults fills in the zero fields of p.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.MaxFixes <= 0 {
		p.MaxFixes = d.MaxFixes
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = max(d.MaxDelay, p.BaseDelay)
	}
	if p.SlowDown <= 0 {
		p.SlowDown = d.SlowDown
	}
	return p
}

// Next says whether to retry a search whose try number attempt (0 for the first try)
// failed with code, and how long to wait first. attempt counts every try of the search,
// whatever it failed with. Delays double with each attempt: BaseDelay after the first
// try, 2·BaseDelay after the second, and so on up to MaxDelay. invalid_tool_input is
// retried only while attempt < MaxFixes: a query the model or Truncate fixed once or
// twice and that still fails will not pass with more tries.
func (p RetryPolicy) Next(code string, attempt int) (retry bool, delay time.Duration) {
	p = p.withDefaults()
	attempt = max(attempt, 0)
	if attempt+1 >= p.MaxAttempts {
		return false, 0
	}
	switch search.Code(code) {
	case search.InvalidToolInput:
		return attempt < p.MaxFixes, 0
	case search.Unavailable, search.ExecutionTimeExceeded:
		return true, p.backoff(p.BaseDelay, attempt)
	case search.TooManyRequests:
		return true, p.backoff(p.BaseDelay*time.Duration(p.SlowDown), attempt)
	}
	return false, 0
}

// backoff returns base·2^attempt capped at MaxDelay, jittered.
func (p RetryPolicy) backoff(base time.Duration, attempt int) time.Duration {
	d := min(base, p.MaxDelay)
	for i := 0; i < attempt && d < p.MaxDelay; i++ {
		d = min(2*d, p.MaxDelay)
	}
	if p.Jitter != nil {
		d = min(max(p.Jitter(d), 0), p.MaxDelay)
	}
	return d
}

// EqualJitter returns a random delay between d/2 and d, which spreads the retries of
// many clients that failed at once.
func EqualJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

// ErrorCode returns the error code of a tool_search_tool_result block of a response
// (invalid_tool_input, unavailable, too_many_requests or execution_time_exceeded), or ""
// when the search succeeded.
func ErrorCode(block anthropic.ToolSearchToolResultBlock) string {
	if block.Content.Type != "tool_search_tool_result_error" && block.Content.ErrorCode == "" {
		return ""
	}
	return string(block.Content.ErrorCode)
}

// MessageErrorCode returns the error code of the first failed tool search in a response
// (see ErrorCode), or "" when no search in it failed.
func MessageErrorCode(msg *anthropic.Message) string {
	if msg == nil {
		return ""
	}
	for _, b := range msg.Content {
		if b.Type == "tool_search_tool_result" {
			if code := ErrorCode(b.AsToolSearchToolResult()); code != "" {
				return code
			}
		}
	}
	return ""
}
