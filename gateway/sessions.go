package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// A Streamable HTTP session id is a capability: whoever sends it speaks as that session,
// runs tools with it and reads what the upstreams send it. The SDK gives out random ids
// but accepts any id from any request, whatever its token or profile. httpSessions binds
// every session to the credential and profile that created it, and bounds how many
// sessions are live, per credential and in total.

// DefaultMaxSessions and DefaultMaxSessionsPerToken are HTTPOptions.MaxSessions' and
// HTTPOptions.MaxSessionsPerToken's defaults: far above what a single user opens (a
// client opens one session per server it is configured with, and an idle one ends after
// the idle timeout), and low enough to bound the memory sessions take (some tens of KB
// each).
const (
	DefaultMaxSessions         = 4096
	DefaultMaxSessionsPerToken = 256
)

// sessionRetryAfter is the Retry-After of a request refused for the session caps: a
// session frees its slot when its client ends it or after the idle timeout.
const sessionRetryAfter = "30"

// credential identifies who created a session: the SHA-256 of its bearer token, or of
// the empty string when the front needs no token (all clients are then one credential).
// Only the hash is kept, so that the table holds no token.
type credential [sha256.Size]byte

type sessionOwner struct {
	cred    credential
	profile string
}

// httpSessions is the session table of one Streamable HTTP handler.
type httpSessions struct {
	g                 *Gateway
	maxTotal, maxCred int // 0: no cap
	auth              bool
	idle              time.Duration

	mu      sync.Mutex
	owners  map[string]sessionOwner
	perCred map[credential]int // live or being created
	total   int
}

func newHTTPSessions(g *Gateway, opts HTTPOptions, auth bool, idle time.Duration) *httpSessions {
	limit := func(n, def int) int {
		switch {
		case n == 0:
			return def
		case n < 0:
			return 0
		}
		return n
	}
	s := &httpSessions{g: g, auth: auth, idle: idle,
		maxTotal: limit(opts.MaxSessions, DefaultMaxSessions), maxCred: limit(opts.MaxSessionsPerToken, DefaultMaxSessionsPerToken),
		owners: map[string]sessionOwner{}, perCred: map[credential]int{}}
	// When the gateway stops, its sessions are no one's any more.
	context.AfterFunc(g.life, s.clear)
	return s
}

// owns reports whether session id was created with cred, as profile.
func (s *httpSessions) owns(id string, cred credential, profile string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.owners[id]
	return ok && o == sessionOwner{cred, profile}
}

// reserve takes a slot for a session cred is creating, or says which cap it is over.
func (s *httpSessions) reserve(cred credential) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxTotal > 0 && s.total >= s.maxTotal {
		return fmt.Errorf("toolshed has %d sessions open, the most it allows (--max-sessions, HTTPOptions.MaxSessions): end sessions no longer in use (a client ends its session with DELETE; an idle session ends after %s), or raise the limit", s.total, s.idleText())
	}
	if s.maxCred > 0 && s.perCred[cred] >= s.maxCred {
		who := "this token has"
		if !s.auth {
			who = "clients have"
		}
		return fmt.Errorf("%s %d sessions open, the most toolshed allows per token (--max-sessions-per-token, HTTPOptions.MaxSessionsPerToken): end sessions no longer in use (a client ends its session with DELETE; an idle session ends after %s), or raise the limit", who, s.perCred[cred], s.idleText())
	}
	s.perCred[cred]++
	s.total++
	return nil
}

func (s *httpSessions) idleText() string {
	if s.idle <= 0 {
		return "never, as the idle timeout is off"
	}
	return s.idle.String()
}

// release gives back a slot reserve took for a session that was not created.
func (s *httpSessions) release(cred credential) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(cred)
}

func (s *httpSessions) drop(cred credential) {
	s.total--
	if s.perCred[cred]--; s.perCred[cred] <= 0 {
		delete(s.perCred, cred)
	}
}

// bind records that session id belongs to o, in the slot reserve took for it.
func (s *httpSessions) bind(id string, o sessionOwner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owners[id] = o
	s.g.clients.setCredential(id, o.cred, true)
}

// forget ends session id's binding and frees its slot.
func (s *httpSessions) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.owners[id]; ok {
		delete(s.owners, id)
		s.drop(o.cred)
		s.g.clients.setCredential(id, o.cred, false)
	}
}

func (s *httpSessions) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range s.owners {
		delete(s.owners, id)
		s.drop(o.cred)
		s.g.clients.setCredential(id, o.cred, false)
	}
}
