// Package learn makes search learn from use: the queries whose searches led to a
// successful call of a tool, read from the search log, are indexed as a field of that
// tool (see search.Index.WithEvidence). A Learner reads the evidence again every
// Interval from the log, which replicas share, so every replica learns from all of their
// traffic; the index with it is built off the request path, and a search uses the plain
// index until it is ready. The gateway and the proxy each keep one.
package learn

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// DefaultInterval is Options.Interval's default: how often the evidence is read again.
const DefaultInterval = time.Minute

// learnPerTool bounds the queries read per tool. The log returns the newest, and the
// field keeps the weightiest (search's Params.LearnedPerTool, 32): reading a few times
// more lets a query that led to many calls long ago outweigh a newer one-off.
const learnPerTool = 128

// DefaultKept is Options.Kept's default: the learned indexes kept, one per catalog
// searched, and a catalog changes only when a server's tools do.
const DefaultKept = 4

// Log is where a Learner reads its evidence: a *searchlog.Log.
type Log interface {
	Evidence(ctx context.Context, opts searchlog.EvidenceOptions) ([]searchlog.Evidence, error)
}

// Options shape a Learner; the zero value is usable.
type Options struct {
	// Interval is how often the evidence is read again; zero means DefaultInterval.
	Interval time.Duration
	// Kept bounds the learned indexes kept; zero means DefaultKept. A gateway keeps
	// DefaultKept for each profile (one per catalog it searches).
	Kept int
	// Logf is told when the log cannot be read, once until it can again; nil says
	// nothing.
	Logf func(format string, args ...any)
}

// Learner keeps the evidence and the learned indexes built with it. A nil Learner
// learns nothing: Index returns its base.
type Learner struct {
	log   Log
	logf  func(format string, args ...any)
	every time.Duration
	kept  int

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

// New returns a Learner that reads log, or nil when log is nil.
func New(log Log, opts Options) *Learner {
	if log == nil {
		return nil
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Kept <= 0 {
		opts.Kept = DefaultKept
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Learner{log: log, logf: opts.Logf, every: opts.Interval, kept: opts.Kept, built: map[*search.Index]learnedIndex{}, building: map[*search.Index]bool{}}
}

// Run reads the evidence at once, then every Interval, until ctx ends.
func (l *Learner) Run(ctx context.Context) {
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
func (l *Learner) refresh(ctx context.Context) {
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

// Index returns the learned index of base, or base while it is being built (or when
// there is no evidence yet).
func (l *Learner) Index(base *search.Index) *search.Index {
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

func (l *Learner) build(base *search.Index, version uint64, ev []search.Evidence) {
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
