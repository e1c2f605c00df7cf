package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Every outcome is counted where the report shows it: a request with no answer in time
// as lost, a wrong answer as mismatched, a failed request and an error result as
// errors; none of them is dropped or counted as answered correctly.
func TestRecordCountsEveryOutcome(t *testing.T) {
	st := stats{}
	st.record("k", time.Millisecond, nil, "")
	st.record("k", 2*time.Millisecond, nil, "got another session's answer")
	st.record("k", 0, errLost, "")
	st.record("k", 0, fmt.Errorf("connection reset"), "")
	st.record("k", 3*time.Millisecond, &toolError{"unavailable"}, "")
	r := report{all: st}
	ks := st["k"]
	if ks.lost != 1 || ks.mismatched != 1 || ks.sample != "got another session's answer" || len(ks.errs) != 2 {
		t.Fatalf("lost %d, mismatched %d (%q), errors %v", ks.lost, ks.mismatched, ks.sample, ks.errs)
	}
	// Answered: the right answer, the wrong one and the error result (not the lost
	// request or the failed one).
	if len(ks.lat) != 3 {
		t.Errorf("%d latencies, want 3", len(ks.lat))
	}
	if got := r.failures(); got != 4 {
		t.Errorf("failures() = %d, want 4", got)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct{ p, want int }{{50, 100}, {99, 198}, {100, 200}, {1, 2}} {
		if got := percentile(d, tc.p); got != time.Duration(tc.want) {
			t.Errorf("p%d = %d, want %d", tc.p, got, tc.want)
		}
	}
	if percentile(nil, 50) != 0 || percentile(d[:1], 99) != 1 {
		t.Error("percentile of an empty or one-element list")
	}
}

// The /metrics scrape sums samples by name and by name and outcome, skipping comments
// and what is not a sample.
func TestParseMetrics(t *testing.T) {
	text := `# HELP toolshed_calls_total Calls.
# TYPE toolshed_calls_total counter
toolshed_calls_total{outcome="ok",server="everything"} 7
toolshed_calls_total{server="memory",outcome="ok"} 3
toolshed_calls_total{outcome="failed",server="memory"} 2
toolshed_searches_total{outcome="ok"} 1.5e+01
toolshed_build_info{replica="toolshed-1",version="dev"} 1
garbage line
`
	m := parseMetrics(strings.NewReader(text))
	for k, want := range map[string]float64{
		"toolshed_calls_total": 12, "toolshed_calls_total{ok}": 10, "toolshed_calls_total{failed}": 2,
		"toolshed_searches_total{ok}": 15, "toolshed_build_info": 1,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}
