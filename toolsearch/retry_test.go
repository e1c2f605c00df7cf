package toolsearch

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

const ms = time.Millisecond

// step is one call of Next and its answer.
type step struct {
	retry bool
	delay time.Duration
}

// sequence calls p.Next(code, attempt) for attempt 0, 1, ... n-1.
func sequence(p RetryPolicy, code string, n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i].retry, out[i].delay = p.Next(code, i)
	}
	return out
}

func TestRetryPolicySequences(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 6, MaxFixes: 2, BaseDelay: 100 * ms, MaxDelay: time.Second}
	tests := []struct {
		name   string
		policy RetryPolicy
		code   string
		want   []step
	}{
		{"unavailable backs off exponentially to the cap", p, "unavailable",
			[]step{{true, 100 * ms}, {true, 200 * ms}, {true, 400 * ms}, {true, 800 * ms}, {true, time.Second}, {false, 0}, {false, 0}}},
		{"execution_time_exceeded backs off", p, "execution_time_exceeded",
			[]step{{true, 100 * ms}, {true, 200 * ms}, {true, 400 * ms}, {true, 800 * ms}, {true, time.Second}, {false, 0}}},
		{"too_many_requests slows down 4x", p, "too_many_requests",
			[]step{{true, 400 * ms}, {true, 800 * ms}, {true, time.Second}, {true, time.Second}, {true, time.Second}, {false, 0}}},
		{"too_many_requests with SlowDown 2", RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * ms, MaxDelay: time.Hour, SlowDown: 2}, "too_many_requests",
			[]step{{true, 200 * ms}, {true, 400 * ms}, {true, 800 * ms}, {false, 0}}},
		{"invalid_tool_input retries at once, MaxFixes times", p, "invalid_tool_input",
			[]step{{true, 0}, {true, 0}, {false, 0}, {false, 0}}},
		{"invalid_tool_input within MaxAttempts", RetryPolicy{MaxAttempts: 2, MaxFixes: 5}, "invalid_tool_input",
			[]step{{true, 0}, {false, 0}}},
		{"unknown code", p, "overloaded_error", []step{{false, 0}, {false, 0}}},
		{"no code", p, "", []step{{false, 0}}},
		{"one attempt only", RetryPolicy{MaxAttempts: 1}, "unavailable", []step{{false, 0}}},
		{"zero policy takes the defaults", RetryPolicy{}, "unavailable",
			[]step{{true, 500 * ms}, {true, time.Second}, {true, 2 * time.Second}, {false, 0}}},
		{"zero policy: too_many_requests", RetryPolicy{}, "too_many_requests",
			[]step{{true, 2 * time.Second}, {true, 4 * time.Second}, {true, 8 * time.Second}, {false, 0}}},
		{"zero policy: invalid_tool_input", RetryPolicy{}, "invalid_tool_input",
			[]step{{true, 0}, {true, 0}, {false, 0}}},
		{"base above the cap", RetryPolicy{MaxAttempts: 3, BaseDelay: time.Minute, MaxDelay: time.Second}, "unavailable",
			[]step{{true, time.Second}, {true, time.Second}, {false, 0}}},
		{"jitter halves", RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * ms, MaxDelay: time.Second, Jitter: func(d time.Duration) time.Duration { return d / 2 }}, "unavailable",
			[]step{{true, 50 * ms}, {true, 100 * ms}, {true, 200 * ms}, {false, 0}}},
		{"jitter is kept within 0..MaxDelay", RetryPolicy{MaxAttempts: 3, BaseDelay: 100 * ms, MaxDelay: time.Second, Jitter: func(d time.Duration) time.Duration {
			if d < 150*ms {
				return d - 150*ms
			}
			return d + time.Hour
		}}, "unavailable",
			[]step{{true, 0}, {true, time.Second}, {false, 0}}},
		{"no jitter on an immediate retry", RetryPolicy{Jitter: func(time.Duration) time.Duration { return time.Hour }}, "invalid_tool_input",
			[]step{{true, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sequence(tc.policy, tc.code, len(tc.want))
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("Next(%q, %d) = %v, %v; want %v, %v", tc.code, i, got[i].retry, got[i].delay, tc.want[i].retry, tc.want[i].delay)
				}
			}
		})
	}
}

func TestRetryPolicyLargeAttempts(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 1 << 30, BaseDelay: time.Second, MaxDelay: time.Minute}
	for _, attempt := range []int{62, 63, 64, 1000, 1<<30 - 2} {
		if retry, d := p.Next("unavailable", attempt); !retry || d != time.Minute {
			t.Errorf("attempt %d: %v, %v; want true, 1m", attempt, retry, d)
		}
	}
	if retry, _ := p.Next("unavailable", 1<<30-1); retry {
		t.Error("retried past MaxAttempts")
	}
	if retry, d := p.Next("unavailable", -5); !retry || d != time.Second {
		t.Errorf("negative attempt: %v, %v", retry, d)
	}
}

func TestEqualJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Second} {
		for range 200 {
			if j := EqualJitter(d); j < d/2 || j > d {
				t.Fatalf("EqualJitter(%v) = %v, outside %v..%v", d, j, d/2, d)
			}
		}
	}
}

// response is a Messages API response holding a tool search and its result.
func response(result string) []byte {
	return []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-5",
	"content":[
	  {"type":"server_tool_use","id":"srvtoolu_01ABC","name":"tool_search_tool_regex","input":{"pattern":"weather"}},
	  {"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01ABC","content":` + result + `}],
	"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":10}}`)
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		name, result, want string
	}{
		{"found", `{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}`, ""},
		{"nothing found", `{"type":"tool_search_tool_search_result","tool_references":[]}`, ""},
		{"invalid_tool_input", `{"type":"tool_search_tool_result_error","error_code":"invalid_tool_input","error_message":"pattern too long"}`, "invalid_tool_input"},
		{"unavailable", `{"type":"tool_search_tool_result_error","error_code":"unavailable"}`, "unavailable"},
		{"too_many_requests", `{"type":"tool_search_tool_result_error","error_code":"too_many_requests"}`, "too_many_requests"},
		{"execution_time_exceeded", `{"type":"tool_search_tool_result_error","error_code":"execution_time_exceeded"}`, "execution_time_exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var msg anthropic.Message
			if err := json.Unmarshal(response(tc.result), &msg); err != nil {
				t.Fatal(err)
			}
			block := msg.Content[1].AsToolSearchToolResult()
			if got := ErrorCode(block); got != tc.want {
				t.Errorf("ErrorCode = %q, want %q", got, tc.want)
			}
			if got := MessageErrorCode(&msg); got != tc.want {
				t.Errorf("MessageErrorCode = %q, want %q", got, tc.want)
			}
		})
	}
	if got := MessageErrorCode(nil); got != "" {
		t.Errorf("MessageErrorCode(nil) = %q", got)
	}
}

// TestRetryLoop runs the loop the package documents against a search that fails with
// each code in turn.
func TestRetryLoop(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, BaseDelay: 10 * ms, MaxDelay: 25 * ms}
	codes := []string{"invalid_tool_input", "unavailable", "too_many_requests", "execution_time_exceeded", ""}
	var slept []time.Duration
	tries := 0
	for attempt := 0; ; attempt++ {
		code := codes[tries]
		tries++
		if code == "" {
			break
		}
		retry, delay := p.Next(code, attempt)
		if !retry {
			t.Fatalf("gave up at attempt %d on %s", attempt, code)
		}
		slept = append(slept, delay)
	}
	want := []time.Duration{0, 20 * ms, 25 * ms, 25 * ms}
	if tries != 5 || len(slept) != len(want) {
		t.Fatalf("%d tries, slept %v", tries, slept)
	}
	for i := range want {
		if slept[i] != want[i] {
			t.Errorf("slept %v, want %v", slept, want)
			break
		}
	}
}
