package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
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

// ownerKeyPrefix starts the link keys of stateless clients (see sessionOwner.linkKey).
const ownerKeyPrefix = "owner:"

// linkKey names the owner of stateless requests for tying their calls to their searches:
// a hash of the credential and the profile, never the credential.
func (o sessionOwner) linkKey() string {
	h := sha256.New()
	h.Write(o.cred[:])
	h.Write([]byte(o.profile))
	return ownerKeyPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// isOwnerKey reports a link key of stateless requests, whose searches tie calls only
// within statelessLinkWindow.
func isOwnerKey(key string) bool { return strings.HasPrefix(key, ownerKeyPrefix) }

// slots counts what is open per credential and in total, against caps of its own (0:
// no cap): the sessions of a Streamable HTTP handler, and its listens. Its user holds
// the lock.
type slots struct {
	maxTotal, maxCred int
	perCred           map[credential]int // open or being opened
	total             int
}

// newSlots returns slots capped at total and perCred, as HTTPOptions give them: zero
// is the default, def or defCred, and a negative value no cap.
func newSlots(total, perCred, def, defCred int) slots {
	limit := func(n, def int) int {
		switch {
		case n == 0:
			return def
		case n < 0:
			return 0
		}
		return n
	}
	return slots{maxTotal: limit(total, def), maxCred: limit(perCred, defCred), perCred: map[credential]int{}}
}

// take takes a slot for cred; when a cap is reached it takes none, and says which
// (overTotal, or else overCred).
func (s *slots) take(cred credential) (overTotal, overCred bool) {
	if s.maxTotal > 0 && s.total >= s.maxTotal {
		return true, false
	}
	if s.maxCred > 0 && s.perCred[cred] >= s.maxCred {
		return false, true
	}
	s.perCred[cred]++
	s.total++
	return false, false
}

// give gives back a slot take took for cred.
func (s *slots) give(cred credential) {
	s.total--
	if s.perCred[cred]--; s.perCred[cred] <= 0 {
		delete(s.perCred, cred)
	}
}

// httpSessions is the session table of one Streamable HTTP handler, and the count of
// its subscriptions/listen streams (see streamable_listen.go).
type httpSessions struct {
	g    *Gateway
	auth bool
	idle time.Duration

	mu       sync.Mutex
	owners   map[string]sessionOwner
	sessions slots
	listens  slots
}

func newHTTPSessions(g *Gateway, opts HTTPOptions, auth bool, idle time.Duration) *httpSessions {
	s := &httpSessions{g: g, auth: auth, idle: idle, owners: map[string]sessionOwner{},
		sessions: newSlots(opts.MaxSessions, opts.MaxSessionsPerToken, DefaultMaxSessions, DefaultMaxSessionsPerToken),
		listens:  newSlots(opts.MaxListens, opts.MaxListensPerToken, DefaultMaxListens, DefaultMaxListensPerToken)}
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
	switch overTotal, overCred := s.sessions.take(cred); {
	case overTotal:
		return fmt.Errorf("toolshed has %d sessions open, the most it allows (--max-sessions, HTTPOptions.MaxSessions): end sessions no longer in use (a client ends its session with DELETE; an idle session ends after %s), or raise the limit", s.sessions.total, s.idleText())
	case overCred:
		return fmt.Errorf("%s %d sessions open, the most toolshed allows per token (--max-sessions-per-token, HTTPOptions.MaxSessionsPerToken): end sessions no longer in use (a client ends its session with DELETE; an idle session ends after %s), or raise the limit", s.who(), s.sessions.perCred[cred], s.idleText())
	}
	return nil
}

// who names the holder of a credential in a refusal for a per-token cap.
func (s *httpSessions) who() string {
	if !s.auth {
		return "clients have"
	}
	return "this token has"
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
	s.sessions.give(cred)
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
		s.sessions.give(o.cred)
		s.g.clients.setCredential(id, o.cred, false)
	}
}

func (s *httpSessions) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range s.owners {
		delete(s.owners, id)
		s.sessions.give(o.cred)
		s.g.clients.setCredential(id, o.cred, false)
	}
}
