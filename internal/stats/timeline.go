package stats

import (
	"fmt"
	"time"
)

// maxPoints bounds the buckets of a timeline.
const maxPoints = 200

// newTimeline returns the empty buckets of [since, until] by hour, day or week (UTC),
// whichever keeps a window readable as bars: at most 48 hours, 180 days, or more (in
// buckets of several weeks past maxPoints weeks); point finds the bucket of a record.
func newTimeline(since, until time.Time) *timeliner {
	if since.IsZero() || until.Before(since) {
		return &timeliner{tl: Timeline{Bucket: "day", Points: []Point{}}}
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
	return &timeliner{tl: tl, start: start, step: step, until: until}
}

// timeliner fills a timeline as records are read.
type timeliner struct {
	tl    Timeline
	start time.Time
	step  time.Duration
	until time.Time
}

// point returns the bucket of t, nil when t is outside the timeline.
func (tr *timeliner) point(t time.Time) *Point {
	n := len(tr.tl.Points)
	if tr.step == 0 {
		return nil
	}
	i := int(t.UTC().Sub(tr.start) / tr.step)
	if i == n && !t.After(tr.until) {
		i-- // a record at the very end of the window
	}
	if i < 0 || i >= n {
		return nil
	}
	return &tr.tl.Points[i]
}
