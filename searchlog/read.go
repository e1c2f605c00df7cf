package searchlog

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"
)

// Read returns the searches and the calls recorded at or after since, each in the
// order of their time. It reads what is written: Flush first to include what is still
// queued. ReadSearches and ReadCalls read them one at a time.
func (l *Log) Read(ctx context.Context, since time.Time) ([]Search, []Call, error) {
	var searches []Search
	for s, err := range l.ReadSearches(ctx, since) {
		if err != nil {
			return nil, nil, err
		}
		searches = append(searches, s)
	}
	var calls []Call
	for c, err := range l.ReadCalls(ctx, since) {
		if err != nil {
			return nil, nil, err
		}
		calls = append(calls, c)
	}
	return searches, calls, nil
}

// micros is since as the log stores times, 0 for a zero since.
func micros(since time.Time) int64 {
	if since.IsZero() {
		return 0
	}
	return since.UnixMicro()
}

// ReadSearches yields the searches recorded at or after since, in the order of their
// time, one at a time as the database returns them (so that a reader such as toolshed
// stats need not hold them all), and stops at the first error.
func (l *Log) ReadSearches(ctx context.Context, since time.Time) iter.Seq2[Search, error] {
	return func(yield func(Search, error) bool) {
		rows, err := l.st.query(ctx, `SELECT time, source, profile, session, query, mode, results, latency_us, error, catalog_tokens, result_tokens, subject FROM searches WHERE time >= ? ORDER BY time, id`, micros(since))
		if err != nil {
			yield(Search{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
			return
		}
		defer rows.Close()
		var hits []hitJSON
		for rows.Next() {
			var s Search
			var at, latency int64
			var results string
			if err := rows.Scan(&at, &s.Source, &s.Profile, &s.Session, &s.Query, &s.Mode, &results, &latency, &s.Error, &s.CatalogTokens, &s.ResultTokens, &s.Subject); err != nil {
				yield(Search{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
				return
			}
			s.Time, s.Latency = time.UnixMicro(at).UTC(), time.Duration(latency)*time.Microsecond
			hits = hits[:0]
			if err := json.Unmarshal([]byte(results), &hits); err != nil {
				yield(Search{}, fmt.Errorf("searchlog: reading %s: a search's results are not the JSON toolshed writes: %w", l.st.where(), err))
				return
			}
			if len(hits) > 0 {
				s.Results = make([]Hit, len(hits))
				for i, h := range hits {
					s.Results[i] = Hit{Tool: h.Tool, Rank: h.Rank}
				}
			}
			if !yield(s, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(Search{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
		}
	}
}

// ReadCalls yields the calls recorded at or after since, as ReadSearches yields the
// searches.
func (l *Log) ReadCalls(ctx context.Context, since time.Time) iter.Seq2[Call, error] {
	return func(yield func(Call, error) bool) {
		rows, err := l.st.query(ctx, `SELECT time, source, profile, session, tool, server, outcome, duration_us, rank, query, subject FROM calls WHERE time >= ? ORDER BY time, id`, micros(since))
		if err != nil {
			yield(Call{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var c Call
			var at, duration int64
			if err := rows.Scan(&at, &c.Source, &c.Profile, &c.Session, &c.Tool, &c.Server, &c.Outcome, &duration, &c.Rank, &c.Query, &c.Subject); err != nil {
				yield(Call{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
				return
			}
			c.Time, c.Duration = time.UnixMicro(at).UTC(), time.Duration(duration)*time.Microsecond
			if !yield(c, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(Call{}, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err))
		}
	}
}

// EvidenceOptions select the evidence Evidence returns.
type EvidenceOptions struct {
	// Since drops calls before it (zero: every call kept).
	Since time.Time
	// PerTool bounds the queries per tool, the newest kept (0: no bound).
	PerTool int
	// MinCount drops queries that led to fewer calls than it (0 or 1: none dropped).
	MinCount int
}

// Evidence returns, for each tool, the queries whose searches led to a successful call
// of it: calls with outcome ok and a recorded query (not "" and not hashed), grouped
// by (tool, query), ordered by tool and then newest first.
//
// A log whose database has not been reached yet (Options.ConnectLater) has none: it
// returns nothing, and no error, having said why it is not connected.
func (l *Log) Evidence(ctx context.Context, opts EvidenceOptions) ([]Evidence, error) {
	if l.unreached.Load() {
		return nil, nil
	}
	from := int64(0)
	if !opts.Since.IsZero() {
		from = opts.Since.UnixMicro()
	}
	rows, err := l.st.query(ctx, `SELECT tool, query, COUNT(*), MAX(time) FROM calls
		WHERE outcome = 'ok' AND query <> '' AND query NOT LIKE 'sha256:%' AND time >= ?
		GROUP BY tool, query HAVING COUNT(*) >= ?
		ORDER BY tool, MAX(time) DESC, query`, from, int64(max(opts.MinCount, 1)))
	if err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	defer rows.Close()
	var out []Evidence
	perTool := 0
	for rows.Next() {
		var e Evidence
		var last, count int64
		if err := rows.Scan(&e.Tool, &e.Query, &count, &last); err != nil {
			return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
		}
		e.Count, e.Last = int(count), time.UnixMicro(last).UTC()
		if len(out) > 0 && out[len(out)-1].Tool == e.Tool {
			perTool++
		} else {
			perTool = 1
		}
		if opts.PerTool > 0 && perTool > opts.PerTool {
			continue
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	return out, nil
}
