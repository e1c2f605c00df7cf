package searchlog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Read returns the searches and the calls recorded at or after since, each in the
// order of their time. It reads what is written: Flush first to include what is still
// queued.
func (l *Log) Read(ctx context.Context, since time.Time) ([]Search, []Call, error) {
	from := since.UnixMicro()
	if since.IsZero() {
		from = 0
	}
	searches, err := l.readSearches(ctx, from)
	if err != nil {
		return nil, nil, err
	}
	calls, err := l.readCalls(ctx, from)
	if err != nil {
		return nil, nil, err
	}
	return searches, calls, nil
}

func (l *Log) readSearches(ctx context.Context, from int64) ([]Search, error) {
	rows, err := l.st.query(ctx, `SELECT time, source, profile, session, query, mode, results, latency_us, error, catalog_tokens, result_tokens FROM searches WHERE time >= ? ORDER BY time, id`, from)
	if err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	defer rows.Close()
	var out []Search
	for rows.Next() {
		var s Search
		var at, latency int64
		var results string
		if err := rows.Scan(&at, &s.Source, &s.Profile, &s.Session, &s.Query, &s.Mode, &results, &latency, &s.Error, &s.CatalogTokens, &s.ResultTokens); err != nil {
			return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
		}
		s.Time, s.Latency = time.UnixMicro(at).UTC(), time.Duration(latency)*time.Microsecond
		var hits []hitJSON
		if err := json.Unmarshal([]byte(results), &hits); err != nil {
			return nil, fmt.Errorf("searchlog: reading %s: a search's results are not the JSON toolshed writes: %w", l.st.where(), err)
		}
		for _, h := range hits {
			s.Results = append(s.Results, Hit{Tool: h.Tool, Rank: h.Rank})
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	return out, nil
}

func (l *Log) readCalls(ctx context.Context, from int64) ([]Call, error) {
	rows, err := l.st.query(ctx, `SELECT time, source, profile, session, tool, server, outcome, duration_us, rank, query FROM calls WHERE time >= ? ORDER BY time, id`, from)
	if err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		var at, duration int64
		if err := rows.Scan(&at, &c.Source, &c.Profile, &c.Session, &c.Tool, &c.Server, &c.Outcome, &duration, &c.Rank, &c.Query); err != nil {
			return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
		}
		c.Time, c.Duration = time.UnixMicro(at).UTC(), time.Duration(duration)*time.Microsecond
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searchlog: reading %s: %w", l.st.where(), err)
	}
	return out, nil
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
