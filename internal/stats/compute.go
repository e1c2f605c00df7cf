package stats

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/searchlog"
)

// Source is where ComputeFrom reads the records. Each method yields the searches (or
// calls) at or after since (all of them for a zero since), in time order, those of the
// same instant in the store's order, and stops at the first error. ComputeFrom reads
// each more than once, so that it keeps tallies of the records rather than the records:
// a *searchlog.Log is a Source, and Records makes one of records in memory.
type Source interface {
	ReadSearches(ctx context.Context, since time.Time) iter.Seq2[searchlog.Search, error]
	ReadCalls(ctx context.Context, since time.Time) iter.Seq2[searchlog.Call, error]
}

// Records is a Source of records in memory, which it sorts by time (stably) in copies
// of its own.
func Records(searches []searchlog.Search, calls []searchlog.Call) Source {
	return records{byTime(searches, func(s *searchlog.Search) time.Time { return s.Time }), byTime(calls, func(c *searchlog.Call) time.Time { return c.Time })}
}

type records struct {
	searches []searchlog.Search
	calls    []searchlog.Call
}

func byTime[T any](recs []T, at func(*T) time.Time) []T {
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b T) int { return at(&a).Compare(at(&b)) })
	return out
}

func (r records) ReadSearches(_ context.Context, since time.Time) iter.Seq2[searchlog.Search, error] {
	return each(r.searches, since, func(s *searchlog.Search) time.Time { return s.Time })
}

func (r records) ReadCalls(_ context.Context, since time.Time) iter.Seq2[searchlog.Call, error] {
	return each(r.calls, since, func(c *searchlog.Call) time.Time { return c.Time })
}

func each[T any](recs []T, since time.Time, at func(*T) time.Time) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for i := range recs {
			if !at(&recs[i]).Before(since) && !yield(recs[i], nil) {
				return
			}
		}
	}
}

// ComputeFrom builds the report of the records of src within the window of opts, as
// they are read: what it keeps grows with the sessions, the tools, the distinct missed
// queries and a duration per record (for exact percentiles), not with the records.
// It reads the calls first (what each session called, and when, judges its searches),
// then the searches and the calls again, side by side in time order (a session's
// searches since its previous call are the queries that call answers). A zero Since or
// Until is the time of the first or last record, which takes one more reading.
func ComputeFrom(ctx context.Context, src Source, opts Options) (Report, error) {
	top := opts.Top
	if top <= 0 {
		top = DefaultTop
	}
	in := func(t time.Time) bool {
		return (opts.Since.IsZero() || !t.Before(opts.Since)) && (opts.Until.IsZero() || !t.After(opts.Until))
	}
	r := Report{Since: opts.Since, Until: opts.Until}
	if r.Since.IsZero() || r.Until.IsZero() {
		first, last, err := span(ctx, src, opts.Since, in)
		if err != nil {
			return Report{}, err
		}
		if r.Since.IsZero() {
			r.Since = first
		}
		if r.Until.IsZero() {
			r.Until = last
		}
	}
	r.Since, r.Until = r.Since.UTC(), r.Until.UTC()

	a := &aggregate{
		r: &r, top: top, tl: newTimeline(r.Since, r.Until), sg: newSuggester(),
		ids: map[string]int32{}, lastCall: map[[2]int32]int64{}, missedQueries: map[string]int{},
		servers: map[string]*Server{}, serverLat: map[string][]time.Duration{}, surfaced: map[string]bool{},
	}
	for c, err := range src.ReadCalls(ctx, opts.Since) {
		if err != nil {
			return Report{}, err
		}
		if in(c.Time) {
			a.call(&c)
		}
	}
	if err := a.merge(ctx, src, opts.Since, in); err != nil {
		return Report{}, err
	}
	a.finish(opts.Catalog)
	return r, nil
}

// span returns the times of the first and the last record within the window.
func span(ctx context.Context, src Source, since time.Time, in func(time.Time) bool) (first, last time.Time, err error) {
	see := func(t time.Time) {
		if !in(t) {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for s, err := range src.ReadSearches(ctx, since) {
		if err != nil {
			return first, last, err
		}
		see(s.Time)
	}
	for c, err := range src.ReadCalls(ctx, since) {
		if err != nil {
			return first, last, err
		}
		see(c.Time)
	}
	return first, last, nil
}

// merge reads the searches and the calls side by side in time order, a search before
// a call of the same instant, for the searches' figures and the suggestions.
func (a *aggregate) merge(ctx context.Context, src Source, since time.Time, in func(time.Time) bool) error {
	nextS, stopS := iter.Pull2(src.ReadSearches(ctx, since))
	defer stopS()
	nextC, stopC := iter.Pull2(src.ReadCalls(ctx, since))
	defer stopC()
	s, sok, err := pull(nextS, in, func(s *searchlog.Search) time.Time { return s.Time })
	if err != nil {
		return err
	}
	c, cok, err := pull(nextC, in, func(c *searchlog.Call) time.Time { return c.Time })
	if err != nil {
		return err
	}
	for sok || cok {
		if sok && (!cok || !c.Time.Before(s.Time)) {
			a.search(&s)
			if s, sok, err = pull(nextS, in, func(s *searchlog.Search) time.Time { return s.Time }); err != nil {
				return err
			}
			continue
		}
		a.sg.call(&c)
		if c, cok, err = pull(nextC, in, func(c *searchlog.Call) time.Time { return c.Time }); err != nil {
			return err
		}
	}
	return nil
}

// pull returns the next record within the window.
func pull[T any](next func() (T, error, bool), in func(time.Time) bool, at func(*T) time.Time) (T, bool, error) {
	for {
		v, err, ok := next()
		if err != nil || !ok {
			return v, false, err
		}
		if in(at(&v)) {
			return v, true, nil
		}
	}
}

// aggregate is what ComputeFrom keeps as it reads.
type aggregate struct {
	r   *Report
	top int
	tl  *timeliner
	sg  *suggester

	// ids numbers the sessions and tools, so that each name is kept once, however many
	// records hold it, and lastCall and sessions cost a few bytes an entry.
	ids map[string]int32

	// Of the calls (read first).
	lastCall                      map[[2]int32]int64 // session, tool → the session's last call of it (Unix ns)
	all, low, unsurfaced, unknown tally
	servers                       map[string]*Server
	serverLat                     map[string][]time.Duration
	callLat                       []time.Duration

	// Of the searches.
	sessions      []bool // by id: the sessions that searched
	nSessions     int
	missedQueries map[string]int
	searchLat     []time.Duration
	surfaced      map[string]bool // tools some search returned
}

// call counts a call by tool, by server and by rank, and notes when its session called
// its tool last.
func (a *aggregate) call(c *searchlog.Call) {
	a.r.Calls++
	if p := a.tl.point(c.Time); p != nil {
		p.Calls++
	}
	if c.Session != "" {
		k, at := [2]int32{a.id(c.Session), a.id(c.Tool)}, c.Time.UnixNano()
		if t, ok := a.lastCall[k]; !ok || at > t {
			a.lastCall[k] = at
		}
	}
	a.callLat = append(a.callLat, c.Duration)
	if unknownTool(*c) {
		a.unknown.add(*c)
		return
	}
	a.all.add(*c)
	switch {
	case c.Rank == 0:
		a.unsurfaced.add(*c)
	case c.Rank > LowRank:
		a.low.add(*c)
	}
	s := a.servers[c.Server]
	if s == nil {
		s = &Server{Server: c.Server}
		a.servers[c.Server] = s
	}
	s.Calls++
	switch c.Outcome {
	case searchlog.OutcomeToolError, searchlog.OutcomeFailed, searchlog.OutcomeUnavailable:
		s.Errors++
	case searchlog.OutcomeTimeout:
		s.Timeouts++
	case searchlog.OutcomeCancelled:
		s.Cancelled++
	}
	a.serverLat[c.Server] = append(a.serverLat[c.Server], c.Duration)
}

// verdict judges a search: a likely miss when it succeeded, has a session, and no call
// of that session at or after it called a tool it returned. Searches that failed or
// have no session are left unjudged.
func (a *aggregate) verdict(s *searchlog.Search) verdict {
	if s.Session == "" || s.Error != "" {
		return unjudged
	}
	session, ok := a.ids[s.Session]
	if !ok {
		return missed // the session called nothing
	}
	at := s.Time.UnixNano()
	for _, h := range s.Results {
		if tool, ok := a.ids[h.Tool]; ok {
			if t, ok := a.lastCall[[2]int32{session, tool}]; ok && t >= at {
				return followed
			}
		}
	}
	return missed
}

// id returns the number of a session or tool name, numbering it if new.
func (a *aggregate) id(name string) int32 {
	id, ok := a.ids[name]
	if !ok {
		id = int32(len(a.ids))
		a.ids[name] = id
	}
	return id
}

// search counts a search: empty results, misses, latency, tokens.
func (a *aggregate) search(s *searchlog.Search) {
	r := a.r
	r.Searches++
	a.sg.search(s)
	for _, h := range s.Results {
		a.surfaced[h.Tool] = true
	}
	v := a.verdict(s)
	if p := a.tl.point(s.Time); p != nil {
		p.Searches++
		if s.Error == "" && len(s.Results) == 0 {
			p.Empty++
		}
		if v == missed {
			p.Misses++
		}
	}
	if s.Session != "" {
		id := a.id(s.Session)
		if int(id) >= len(a.sessions) {
			a.sessions = append(a.sessions, make([]bool, int(id)+1-len(a.sessions))...)
		}
		if !a.sessions[id] {
			a.sessions[id] = true
			a.nSessions++
		}
	}
	switch {
	case s.Query == "":
		r.UnrecordedQueries++
	case isHashed(s.Query):
		r.HashedQueries++
	}
	a.searchLat = append(a.searchLat, s.Latency)
	if s.Error != "" {
		r.FailedSearches++
		return
	}
	if len(s.Results) == 0 {
		r.EmptySearches++
	}
	if s.CatalogTokens > 0 {
		r.Tokens.Searches++
		r.Tokens.CatalogTokens += int64(s.CatalogTokens)
		r.Tokens.ResultTokens += int64(s.ResultTokens)
	}
	switch v {
	case missed:
		r.Misses.Count++
		if s.Query != "" {
			a.missedQueries[s.Query]++
		}
		fallthrough
	case followed:
		r.Misses.Judged++
	}
}

// finish turns the counts into the report's figures and lists.
func (a *aggregate) finish(snap *catalog.Snapshot) {
	r, top := a.r, a.top
	r.Sessions = a.nSessions
	r.EmptyPct = percent.Of(r.EmptySearches, r.Searches)
	r.Misses.Pct = percent.Of(r.Misses.Count, r.Misses.Judged)
	r.Misses.Queries = topQueries(a.missedQueries, top)
	r.SearchLatency = latency(a.searchLat)
	t := &r.Tokens
	t.Saved = t.CatalogTokens - t.ResultTokens
	if t.CatalogTokens > 0 {
		t.SavedPct = percent.Round(100 * float64(t.Saved) / float64(t.CatalogTokens))
		t.PerSearch = t.Saved / int64(t.Searches)
	}

	r.CallLatency = latency(a.callLat)
	r.ToolsCalled = len(a.all.tools)
	r.TopTools = a.all.top(top)
	r.LowRank = RankedCalls{a.low.calls, percent.Of(a.low.calls, r.Calls), a.low.top(top)}
	r.Unsurfaced = RankedCalls{a.unsurfaced.calls, percent.Of(a.unsurfaced.calls, r.Calls), a.unsurfaced.top(top)}
	r.UnknownTools = RankedCalls{a.unknown.calls, percent.Of(a.unknown.calls, r.Calls), a.unknown.top(top)}
	r.Servers = make([]Server, 0, len(a.servers))
	for name, s := range a.servers {
		s.ErrorPct = percent.Of(s.Errors, s.Calls)
		s.TimeoutPct = percent.Of(s.Timeouts, s.Calls)
		s.P50Ms = latency(a.serverLat[name]).P50Ms
		r.Servers = append(r.Servers, *s)
	}
	slices.SortFunc(r.Servers, func(x, y Server) int {
		return cmp.Or(cmp.Compare(y.Calls, x.Calls), cmp.Compare(x.Server, y.Server))
	})

	r.NeverSurfaced = NeverSurfaced{Tools: []string{}}
	if snap != nil {
		ns := NeverSurfaced{Catalog: true, CatalogTools: snap.Len(), Tools: []string{}}
		for _, t := range snap.Tools() {
			if !a.surfaced[t.Qualified] {
				ns.Tools = append(ns.Tools, t.Qualified)
			}
		}
		slices.Sort(ns.Tools)
		ns.Count = len(ns.Tools)
		r.NeverSurfaced = ns
	}
	r.Timeline = a.tl.tl
	r.Suggestions = a.sg.suggestions(snap, top)
}
