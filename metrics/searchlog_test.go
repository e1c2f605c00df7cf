package metrics_test

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/toolshed/toolshed/internal/promtest"
	"github.com/toolshed/toolshed/metrics"
)

// logState is a search log whose state the test sets.
type logState struct {
	writing atomic.Bool
	lost    atomic.Int64
}

func (s *logState) Writing() bool { return s.writing.Load() }
func (s *logState) Lost() int64   { return s.lost.Load() }

// TestSearchLogState: the search log's state is read at each scrape.
func TestSearchLogState(t *testing.T) {
	m := metrics.New("test", "")
	var s logState
	m.SearchLog(&s)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		writing bool
		lost    int64
	}{{false, 0}, {false, 12}, {true, 12}} {
		s.writing.Store(tc.writing)
		s.lost.Store(tc.lost)
		f := promtest.Scrape(t, srv.URL, "")
		up, _ := f.Value("toolshed_search_log_up", nil)
		lost, _ := f.Value("toolshed_search_log_lost_records_total", nil)
		want := 0.0
		if tc.writing {
			want = 1
		}
		if up != want || lost != float64(tc.lost) {
			t.Errorf("writing %v, %d lost: toolshed_search_log_up %v, toolshed_search_log_lost_records_total %v", tc.writing, tc.lost, up, lost)
		}
	}
	var nilMetrics *metrics.Metrics
	nilMetrics.SearchLog(&s) // no metrics: nothing to add to, and no panic
}
