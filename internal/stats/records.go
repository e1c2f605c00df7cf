package stats

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/searchlog"
)

// ErrRecords reports a records file that cannot be read.
var ErrRecords = errors.New("bad search log record")

// record is one line of a records file: a search or a call of the search log, with the
// field names of the JSON reports and durations in milliseconds.
type record struct {
	Type    string `json:"type"`
	Time    string `json:"time"`
	Source  string `json:"source"`
	Profile string `json:"profile"`
	Session string `json:"session"`
	Subject string `json:"subject"`
	Query   string `json:"query"`

	Mode          string  `json:"mode"`
	RawResults    []hit   `json:"results"`
	LatencyMs     float64 `json:"latency_ms"`
	Error         string  `json:"error"`
	CatalogTokens int     `json:"catalog_tokens"`
	ResultTokens  int     `json:"result_tokens"`

	Tool       string  `json:"tool"`
	Server     string  `json:"server"`
	Outcome    string  `json:"outcome"`
	DurationMs float64 `json:"duration_ms"`
	Rank       int     `json:"rank"`
}

type hit struct {
	Tool string `json:"tool"`
	Rank int    `json:"rank"`
}

// ReadRecords reads a records file: JSON lines, each a search
//
//	{"type": "search", "time": RFC3339, "session", "query", "mode", "results": [{"tool", "rank"}],
//	 "latency_ms", "error", "catalog_tokens", "result_tokens", "source", "profile", "subject"}
//
// or a call
//
//	{"type": "call", "time", "session", "tool", "server", "outcome", "duration_ms", "rank",
//	 "query", "source", "profile", "subject"}
//
// A call without a server is given the part of its tool's name before "__".
//
// Blank lines are skipped. A line that is not such a record is an error naming it, and
// nothing is returned.
func ReadRecords(r io.Reader) ([]searchlog.Search, []searchlog.Call, error) {
	var searches []searchlog.Search
	var calls []searchlog.Call
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		s, c, err := parseRecord(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w on line %d: %v", ErrRecords, line, err)
		}
		if s != nil {
			searches = append(searches, *s)
		} else {
			calls = append(calls, *c)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading the records: %w", err)
	}
	return searches, calls, nil
}

func parseRecord(b []byte) (*searchlog.Search, *searchlog.Call, error) {
	var rec record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, nil, fmt.Errorf("%v (each line is one JSON object: a search or a call)", err)
	}
	if dec.More() {
		return nil, nil, errors.New("more than one JSON value on the line")
	}
	at, err := time.Parse(time.RFC3339Nano, rec.Time)
	if err != nil {
		return nil, nil, fmt.Errorf("time %q is not an RFC 3339 time such as 2026-12-01T09:30:00Z", rec.Time)
	}
	switch rec.Type {
	case "search":
		if rec.Tool != "" || rec.Server != "" || rec.Outcome != "" || rec.DurationMs != 0 || rec.Rank != 0 {
			return nil, nil, errors.New("a search has no tool, server, outcome, duration_ms or rank (those are a call's)")
		}
		lat, err := millis("latency_ms", rec.LatencyMs)
		if err != nil {
			return nil, nil, err
		}
		s := &searchlog.Search{
			Time: at, Source: rec.Source, Profile: rec.Profile, Session: rec.Session, Subject: rec.Subject, Query: rec.Query,
			Mode: rec.Mode, Latency: lat, Error: rec.Error, CatalogTokens: rec.CatalogTokens, ResultTokens: rec.ResultTokens,
		}
		for i, h := range rec.RawResults {
			if h.Tool == "" || h.Rank < 1 {
				return nil, nil, fmt.Errorf("result %d needs a tool and a rank from 1", i+1)
			}
			s.Results = append(s.Results, searchlog.Hit{Tool: h.Tool, Rank: h.Rank})
		}
		if rec.CatalogTokens < 0 || rec.ResultTokens < 0 {
			return nil, nil, errors.New("catalog_tokens and result_tokens cannot be negative")
		}
		return s, nil, nil
	case "call":
		if rec.RawResults != nil || rec.Mode != "" || rec.LatencyMs != 0 || rec.Error != "" || rec.CatalogTokens != 0 || rec.ResultTokens != 0 {
			return nil, nil, errors.New("a call has no results, mode, latency_ms, error or tokens (those are a search's)")
		}
		if rec.Tool == "" {
			return nil, nil, errors.New("a call needs its tool")
		}
		switch rec.Outcome {
		case searchlog.OutcomeOK, searchlog.OutcomeToolError, searchlog.OutcomeFailed,
			searchlog.OutcomeTimeout, searchlog.OutcomeCancelled, searchlog.OutcomeUnavailable:
		default:
			return nil, nil, fmt.Errorf("outcome %q is not one of ok, tool_error, failed, timeout, cancelled, unavailable", rec.Outcome)
		}
		if rec.Rank < 0 {
			return nil, nil, fmt.Errorf("rank %d: a call's rank is 0 (no search returned the tool) or from 1", rec.Rank)
		}
		if rec.Server == "" {
			rec.Server, _, _ = strings.Cut(rec.Tool, catalog.Separator)
		}
		d, err := millis("duration_ms", rec.DurationMs)
		if err != nil {
			return nil, nil, err
		}
		return nil, &searchlog.Call{
			Time: at, Source: rec.Source, Profile: rec.Profile, Session: rec.Session, Subject: rec.Subject, Tool: rec.Tool, Server: rec.Server,
			Outcome: rec.Outcome, Duration: d, Rank: rec.Rank, Query: rec.Query,
		}, nil
	default:
		return nil, nil, fmt.Errorf("type %q is neither \"search\" nor \"call\"", rec.Type)
	}
}

// millis converts a duration in milliseconds, refusing what no duration is.
func millis(field string, v float64) (time.Duration, error) {
	if v < 0 || math.IsNaN(v) || v > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, fmt.Errorf("%s %v is not a duration in milliseconds", field, v)
	}
	return time.Duration(math.Round(v * float64(time.Millisecond))), nil
}
