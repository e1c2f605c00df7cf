// Package recent ties a tool call to the search that found it: each client's latest
// searches are kept, and a call of a tool is given the best rank at which one of them
// returned it and the query of the newest that did. That is what the search log records
// with each call (searchlog.Call's Rank and Query), and what the learned field learns
// from. The gateway and the proxy both keep one.
package recent

import (
	"sync"
	"time"
)

// Bounds of what a Searches keeps.
const (
	// Recent is how many of a client's latest searches are kept.
	Recent = 8
	// Clients is how many clients are remembered, the oldest forgotten first.
	Clients = 4096
)

// Searches keeps the latest searches of each client, by a key the caller chooses (a
// session's name; for clients with no session, who sent them). The zero value is
// ready to use, and it is safe for concurrent use.
type Searches struct {
	// Window, when positive, is how long a search is kept for the keys Windowed says
	// (zero: every key): a key that names no session, such as a token's stateless
	// requests, may mix several conversations, so a call is tied only to a search made
	// shortly before it.
	Window time.Duration
	// Windowed reports whether key's searches expire after Window; nil means all.
	Windowed func(key string) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	clients map[string]*recent
	order   []string // keys, oldest first, for forgetting
}

type recent struct {
	searches []search // newest last
}

type search struct {
	query string
	tools []string // best first
	at    time.Time
}

func (s *Searches) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Remember keeps a search of key's that returned tools, best first, forgetting the
// client's oldest beyond Recent and the oldest client beyond Clients. A search with no
// key or no tools is not kept.
func (s *Searches) Remember(key, query string, tools []string) {
	if key == "" || len(tools) == 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients == nil {
		s.clients = map[string]*recent{}
	}
	r := s.clients[key]
	if r == nil {
		r = &recent{}
		s.clients[key] = r
		s.order = append(s.order, key)
		for len(s.order) > Clients {
			delete(s.clients, s.order[0])
			s.order = s.order[1:]
		}
	}
	if len(r.searches) == Recent {
		copy(r.searches, r.searches[1:])
		r.searches = r.searches[:Recent-1]
	}
	r.searches = append(r.searches, search{query, append([]string(nil), tools...), now})
}

// Found returns the best rank (1-based) at which key's kept searches returned tool,
// and the query of the newest of them that did; 0 and "" when none did.
func (s *Searches) Found(key, tool string) (rank int, query string) {
	since := time.Time{}
	if s.Window > 0 && (s.Windowed == nil || s.Windowed(key)) {
		since = s.now().Add(-s.Window)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.clients[key]
	if r == nil {
		return 0, ""
	}
	for i := len(r.searches) - 1; i >= 0; i-- {
		if r.searches[i].at.Before(since) {
			break
		}
		for j, t := range r.searches[i].tools {
			if t != tool {
				continue
			}
			if rank == 0 {
				query = r.searches[i].query
			}
			if rank == 0 || j+1 < rank {
				rank = j + 1
			}
			break
		}
	}
	return rank, query
}
