package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionTag names a client session in the activity log: the first 12 hex digits of an
// HMAC-SHA256 of its id under a key drawn when the process starts. A session id is a
// capability (whoever sends it speaks as the session), so the log, which is kept and
// shared, must not hold it; the keyed hash cannot be turned back into the id, nor
// matched against a guessed or leaked id, nor compared across runs, yet names the same
// session the same way throughout a run. Sessions without an id (stdio, in-memory,
// stateless HTTP POSTs) are named by the random tag newSessionTag drew when toolshed
// started tracking them; this names one it does not track by its address, hashed the
// same way.
func sessionTag(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	id := ss.ID()
	if id == "" {
		id = fmt.Sprintf("%p", ss)
	}
	m := hmac.New(sha256.New, sessionTagKey)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))[:12]
}

// newSessionTag is the tag of a session toolshed starts tracking: sessionTag's, but
// for a session without an id one drawn at random, never another session's. An
// address is not a name: once a session is freed, a later one may get its address,
// and with it the earlier session's recent searches, to which the search log would
// link the later session's calls (a stateless HTTP POST's session, freed after its
// POST, is one such, and may be another client's).
func newSessionTag(ss *mcp.ServerSession) string {
	if ss == nil || ss.ID() != "" {
		return sessionTag(ss)
	}
	m := hmac.New(sha256.New, sessionTagKey)
	m.Write([]byte(rand.Text()))
	return hex.EncodeToString(m.Sum(nil))[:12]
}

var sessionTagKey = func() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return key
}()
