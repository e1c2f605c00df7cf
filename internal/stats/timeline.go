package stats

import (
	"fmt"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// maxPoints bounds the buckets of a timeline.
const maxPoints = 200

// timeline buckets the searches and calls of [since, until] by hour, day or week (UTC),
// whichever keeps a window readable as bars: at most 48 hours, 180 days, or more (in
// buckets of several weeks past maxPoints weeks).
func timeline(since, until time.Time, searches []searchlog.Search, calls []searchlog.Call, verdicts []verdict) Timeline {
	if since.IsZero() || until.Before(since) {
		return Timeline{Bucket: "day", Points: []Point{}}
	}
	span := until.Sub(since)
	tl := Timeline{Bucket: "week"}
	step := 7 * 24 * time.Hour
	switch {
	case span <= 48*time.Hour:
		tl.Bucket, step = "hour", time.Hour
	case span <= 180*24*time.Hour:
		tl.Bucket, step = "day", 24*time.Hour
	case span > maxPoints*step:
		// Years of records: buckets of several weeks, so the chart keeps a bar per bucket.
		weeks := int(span/(maxPoints*step)) + 1
		tl.Bucket, step = fmt.Sprintf("%d weeks", weeks), time.Duration(weeks)*step
	}
	// Durations truncate from the zero time, a Monday, so weeks start on Mondays.
	start := since.UTC().Truncate(step)
	// A window that ends on a bucket's start (midnight, for days) does not draw it.
	n := max(1, int((until.UTC().Sub(start)+step-1)/step))
	tl.Points = make([]Point, n)
	for i := range tl.Points {
		tl.Points[i].Start = start.Add(time.Duration(i) * step)
	}
	at := func(t time.Time) *Point {
		i := int(t.UTC().Sub(start) / step)
		if i == n && !t.After(until) {
			i-- // a record at the very end of the window
		}
		if i < 0 || i >= n {
			return nil
		}
		return &tl.Points[i]
	}
	for i, s := range searches {
		p := at(s.Time)
		if p == nil {
			continue
		}
		p.Searches++
		if s.Error == "" && len(s.Results) == 0 {
			p.Empty++
		}
		if verdicts[i] == missed {
			p.Misses++
		}
	}
	for _, c := range calls {
		if p := at(c.Time); p != nil {
			p.Calls++
		}
	}
	return tl
}
