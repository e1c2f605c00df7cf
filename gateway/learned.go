package gateway

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// The gateway's search learns from use (see search.Index.WithEvidence): the queries
// whose searches led to a successful call of a tool, read from the search log, are
// indexed as a field of that tool. The evidence is read again every LearnInterval from
// the store, which replicas share, so every replica learns from all of their traffic;
// the index with it is built off the request path, and a search uses the plain index
// until it is ready.

// DefaultLearnInterval is Options.LearnInterval's default: how often the evidence is
// read again.
const DefaultLearnInterval = time.Minute

// learnPerTool bounds the queries read per tool. The log returns the newest, and the
// field keeps the weightiest (search's Params.LearnedPerTool, 32): reading a few times
// more lets a query that led to many calls long ago outweigh a newer one-off.
const learnPerTool = 128

// learnedKept bounds the learned indexes kept for each profile: one per catalog it
// searches (its scope's own, see assembly.plan), and a catalog changes only when a
// server's tools do.
const learnedKept = 4

// learner keeps the evidence and the learned indexes built with it.
type learner struct {
	log   *searchlog.Log
	logf  func(format string, args ...any)
	every time.Duration
	kept  int // learned indexes kept: learnedKept for each profile

	mu       sync.Mutex
	ev       []search.Evidence
	sum      uint64 // fingerprint of ev: a read that changes nothing rebuilds nothing
	version  uint64 // counts changes of ev
	built    map[*search.Index]learnedIndex
	building map[*search.Index]bool
	failing  bool // the last read failed (said once until one succeeds)
}

type learnedIndex struct {
	version uint64
	ix      *search.Index
}

// newLearner returns nil when there is no log or learning is off. profiles counts the
// profiles, the default one included.
func newLearner(log *searchlog.Log, off bool, every time.Duration, profiles int, logf func(string, ...any)) *learner {
	if log == nil || off {
		return nil
	}
	if every <= 0 {
		every = DefaultLearnInterval
	}
	return &learner{log: log, logf: logf, every: every, kept: learnedKept * profiles, built: map[*search.Index]learnedIndex{}, building: map[*search.Index]bool{}}
}

// run reads the evidence at once, then every l.every, until ctx ends.
func (l *learner) run(ctx context.Context) {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		l.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refresh reads the evidence; a store that fails keeps the evidence read before,
// and says so once.
func (l *learner) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := l.log.Evidence(rctx, searchlog.EvidenceOptions{PerTool: learnPerTool})
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if !l.failing && ctx.Err() == nil {
			l.logf("search log: cannot read what searches led to calls, so search learns nothing new until it can (it keeps what it learned): %v", err)
		}
		l.failing = true
		return
	}
	if l.failing {
		l.logf("search log: reading what searches led to calls again")
		l.failing = false
	}
	h := fnv.New64a()
	for _, e := range got {
		h.Write([]byte(e.Tool + "\x00" + e.Query + "\x00" + strconv.Itoa(e.Count) + "\x00" + strconv.FormatInt(e.Last.UnixMicro(), 10) + "\x00"))
	}
	if sum := h.Sum64(); sum != l.sum || len(got) != len(l.ev) {
		l.sum, l.ev = sum, got
		l.version++
	}
}

// index returns the learned index of base, or base while it is being built (or when
// there is no evidence yet).
func (l *learner) index(base *search.Index) *search.Index {
	if l == nil {
		return base
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ev) == 0 {
		return base
	}
	li, ok := l.built[base]
	if (!ok || li.version != l.version) && !l.building[base] {
		l.building[base] = true
		go l.build(base, l.version, l.ev)
	}
	if ok {
		return li.ix // the newest built; an older version is better than none
	}
	return base
}

func (l *learner) build(base *search.Index, version uint64, ev []search.Evidence) {
	ix := base.WithEvidence(ev, time.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.building, base)
	l.built[base] = learnedIndex{version, ix}
	if len(l.built) > l.kept {
		for b := range l.built {
			if b != base {
				delete(l.built, b) // an index of a catalog no longer served, most likely
				break
			}
		}
	}
}
