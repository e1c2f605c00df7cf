package main

import (
	"errors"
	"testing"
)

// The proxy mode counts a huge answer as answered only when it got the api_error of an
// answer over the bound: as a 500, or as the last event of a stream that began.
func TestCheckHuge(t *testing.T) {
	const over = `{"type":"error","error":{"type":"api_error","message":"the upstream model API's answer is over 64 MiB, ..."}}`
	for _, tc := range []struct {
		name   string
		stream bool
		status int
		answer string
		err    error
		ok     bool
	}{
		{"body over the bound", false, 500, over, nil, true},
		{"stream over the bound", true, 200, "event: message_start\ndata: {}\n\nevent: error\ndata: " + over + "\n\n", nil, true},
		{"stream refused before it began", true, 500, over, nil, true},
		{"the whole answer passed on", false, 200, `{"type":"message"}`, nil, false},
		{"stream without an error event", true, 200, "event: message_start\ndata: {}\n\n", nil, false},
		{"another error", false, 500, `{"type":"error","error":{"type":"api_error","message":"not JSON"}}`, nil, false},
		{"no answer", false, 0, "", errors.New("EOF"), false},
	} {
		if got := checkHuge(tc.stream, tc.status, tc.answer, tc.err); (got == "") != tc.ok {
			t.Errorf("%s: checkHuge = %q, want ok %v", tc.name, got, tc.ok)
		}
	}
}
