package config

import (
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// SearchLog configures the search log (package searchlog): where it is, what it keeps
// of queries, and for how long.
type SearchLog struct {
	// DB names the database: "" for the default SQLite file in the user's data
	// directory, a path or file: URI, a postgres:// URL, or "off" for no log. Expanded.
	DB string
	// Queries is "plain", "hash" or "off" ("" is plain).
	Queries string
	// MaxAge and MaxRows bound what is kept; 0 means searchlog's defaults (90 days,
	// a million searches and a million calls), negative no bound.
	MaxAge  time.Duration
	MaxRows int
	// NoLearn turns off the learned field (learn: off): search then ignores what the
	// log says searches led to.
	NoLearn bool
	// LearnEvery is how often the learned field is read again from the log (learn_every);
	// 0 means the gateway's default (a minute).
	LearnEvery time.Duration
}

// searchLog reads search_log: {db, queries, max_age, max_rows, learn, learn_every}.
func (l *loader) searchLog(n *yaml.Node, key string) SearchLog {
	var s SearchLog
	if isNull(n) {
		return s
	}
	if n.Kind != yaml.MappingNode {
		l.warn(key, "is %s, not a mapping such as {db: off} or {queries: hash, max_age: 30d}; the search log keeps its defaults", kindName(n))
		return s
	}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		switch p.key {
		case "db":
			v, ok := str(p.val)
			if !ok {
				l.warn(k, "is %s, not a file path, a postgres:// URL or off; the default file is used", kindName(p.val))
				continue
			}
			s.DB = l.expand(v, k)
		case "queries":
			v, _ := str(p.val)
			switch v {
			case "plain", "hash", "off":
				s.Queries = v
			default:
				// Fail closed: a wrong value must not store the queries it meant to hide.
				l.warn(k, "%s is not plain, hash or off; queries are not logged (off) until it is fixed", describe(p.val))
				s.Queries = "off"
			}
		case "max_age":
			d, problem := age(p.val)
			if problem != "" {
				l.warn(k, "%s is %s; write a duration such as 30d or 720h; the default (90 days) applies", describe(p.val), problem)
				continue
			}
			s.MaxAge = d
		case "max_rows":
			i, ok := intOf(p.val)
			if !ok || i < 0 {
				l.warn(k, "%s is not a whole number of 0 or more; the default (1,000,000) applies", describe(p.val))
				continue
			}
			s.MaxRows = i
		case "learn":
			v, _ := str(p.val)
			b, isBool := boolOf(p.val)
			switch {
			case v == "on" || isBool && b:
			case v == "off" || isBool && !b:
				s.NoLearn = true
			default:
				l.warn(k, "%s is not on or off; search learns from the log (on)", describe(p.val))
			}
		case "learn_every":
			d, problem := duration(p.val)
			if problem == "" && d < time.Second {
				problem = "under a second"
			}
			if problem != "" {
				l.warn(k, "%s is %s; write a duration of a second or more, such as 30s or 5m; the default (1m) applies", describe(p.val), problem)
				continue
			}
			s.LearnEvery = d
		default:
			l.warn(k, "unknown setting, ignored; search_log takes db, queries, max_age, max_rows, learn and learn_every")
		}
	}
	return s
}

// age reads a retention period: a number of days ("30d"), or what duration reads.
func age(n *yaml.Node) (time.Duration, string) {
	if n.Kind == yaml.ScalarNode {
		if days, ok := strings.CutSuffix(strings.TrimSpace(n.Value), "d"); ok {
			f, err := strconv.ParseFloat(days, 64)
			switch {
			case err != nil:
				return 0, "not a duration"
			case f < 0:
				return 0, "negative"
			case f > 100*365:
				return 0, "too long"
			}
			return time.Duration(f * 24 * float64(time.Hour)), ""
		}
	}
	return duration(n)
}
