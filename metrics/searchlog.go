package metrics

import "github.com/prometheus/client_golang/prometheus"

// SearchLogState is what the search log says of itself; *searchlog.Log has it.
type SearchLogState interface {
	// Writing reports whether the log writes to its database now.
	Writing() bool
	// Lost counts the records it could not write, in all.
	Lost() int64
}

// SearchLog adds the search log's state, read at each scrape:
// toolshed_search_log_up and toolshed_search_log_lost_records_total. A replica that
// started while its database was down, or lost it since, serves on; these say so to
// whoever watches. Call it once, and not on a nil Metrics.
func (m *Metrics) SearchLog(s SearchLogState) {
	if m == nil || s == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolshed_search_log_up", Help: "1 while the search log writes to its database; 0 while the database fails or has not been reached since start (records wait, up to the queue's size, then are lost).",
		}, func() float64 {
			if s.Writing() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolshed_search_log_lost_records_total", Help: "Searches and calls the search log could not write: dropped by a full queue, or given up while its database failed or at exit.",
		}, func() float64 { return float64(s.Lost()) }),
	)
}
