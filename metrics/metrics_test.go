package metrics_test

import (
	"testing"
	"time"

	"github.com/toolshed/toolshed/metrics"
)

// BenchmarkCall is what counting one call costs (a counter by two labels and a
// histogram observation), with metrics on and off (nil).
func BenchmarkCall(b *testing.B) {
	for _, tc := range []struct {
		name string
		m    *metrics.Metrics
	}{{"on", metrics.New("test", "")}, {"off", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.m.Call("everything", "ok", "", 3*time.Millisecond)
			}
		})
	}
}

// A nil *Metrics records nothing and serves 404, without panicking: it is how a gateway
// runs without metrics.
func TestNilIsOff(t *testing.T) {
	var m *metrics.Metrics
	m.Search("", time.Millisecond)
	m.Describe("invalid_tool_input", time.Millisecond)
	m.Call("s", "ok", "", time.Millisecond)
	m.Upstream("s", true, 3)
	m.Restart("s")
	m.SessionStarted(metrics.HTTP)
	m.SessionEnded(metrics.HTTP)
	m.CatalogTokens(10)
	m.TokensSaved(5)
	if h := m.Handler(); h == nil {
		t.Fatal("a nil Metrics has no handler")
	}
}
