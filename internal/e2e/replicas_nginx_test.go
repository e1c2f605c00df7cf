//go:build e2e && unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sessions spread over three toolshed replicas behind Debian's nginx with the shipped
// affinity config (deploy/nginx/toolshed.conf): every request of a session reaches the
// replica its id names, and every answer is the one asked for. Then one replica is
// killed (SIGKILL): the next request of each of its sessions gets 404 through nginx
// (its owner is down, a backup answers), and the client, the go-sdk's and the
// TypeScript SDK's, initializes again on a live replica and goes on; the other sessions
// see nothing.
func TestReplicasNginxAffinity(t *testing.T) {
	const goSessions, tsSessions, rounds = 12, 6, 3
	rs := startReplicas(t, 3, false, goSessions+tsSessions)
	ts := rs.startTS(tsSessions, rounds, goSessions)
	ctx := context.Background()

	sessions := make([]*goSession, goSessions)
	rs.each(t, sessions, func(s *goSession) error {
		if err := rs.connectGo(ctx, s); err != nil {
			return err
		}
		return rs.rounds(ctx, s, 0, rounds, false)
	})
	tsBefore := ts.until(t, "paused")
	tsIDs := tsSessionIDs(t, tsBefore)

	// Every replica owns sessions, and every request of a session went to its owner.
	owned := map[string]int{}
	for _, s := range sessions {
		owned[rs.owner(s.ids[0])]++
	}
	for _, id := range tsIDs {
		owned[rs.owner(id)]++
	}
	for _, r := range rs.replicas {
		if owned[r.addr] == 0 {
			t.Errorf("%s owns none of the %d sessions: %v", r.id, goSessions+tsSessions, owned)
		}
	}
	perReplica := rs.checkAffinity(t, "before the kill", nil)
	t.Logf("requests with a session id per replica before the kill: %v; sessions per replica: %v", perReplica, owned)

	// toolshed-2 dies. Its sessions' next request is refused with 404 (not a hang, not
	// a 502), and the client starts a new session on a live replica.
	killed := rs.replicas[1]
	rs.kill(1)
	rs.each(t, sessions, func(s *goSession) error {
		return rs.rounds(ctx, s, rounds, rounds, rs.owner(s.ids[0]) == killed.addr)
	})
	ts.resume(t)
	tsAfter := ts.until(t, "done")
	for _, s := range sessions {
		wasKilled := rs.owner(s.ids[0]) == killed.addr
		if wasKilled != (s.reconnects == 1) {
			t.Errorf("go session %d (%v): %d reconnections; want 1 exactly when its owner was killed", s.n, s.ids, s.reconnects)
		}
		if last := s.ids[len(s.ids)-1]; rs.owner(last) == killed.addr || rs.owner(last) == "" {
			t.Errorf("go session %d continued on session %q, not one of a live replica", s.n, last)
		}
	}
	var done struct {
		Sessions []struct {
			Rounds, Reconnects, Errors, Mismatched int
			ID                                     string
		}
	}
	decodeEvent(t, tsAfter[len(tsAfter)-1], &done)
	for i, s := range done.Sessions {
		wasKilled := rs.owner(tsIDs[i]) == killed.addr
		if s.Rounds != 2*rounds || s.Errors != 0 || s.Mismatched != 0 {
			t.Errorf("TypeScript session %d: %d rounds of %d, %d errors, %d mismatched", i, s.Rounds, 2*rounds, s.Errors, s.Mismatched)
		}
		if wasKilled != (s.Reconnects == 1) {
			t.Errorf("TypeScript session %d (first %s, last %s): %d reconnections; want 1 exactly when its owner was killed", i, tsIDs[i], s.ID, s.Reconnects)
		}
		if rs.owner(s.ID) == killed.addr || rs.owner(s.ID) == "" {
			t.Errorf("TypeScript session %d continued on session %q, not one of a live replica", i, s.ID)
		}
	}
	for _, ev := range tsAfter {
		if ev["step"] == "error" && ev["status"] != float64(404) {
			t.Errorf("the TypeScript client got an error other than 404: %v", ev)
		}
		if ev["step"] == "mismatch" {
			t.Errorf("the TypeScript client got a wrong answer: %v", ev)
		}
	}
	after := rs.checkAffinity(t, "after the kill", killed)
	t.Logf("requests with a session id per replica in all: %v", after)
}

// Three stateless replicas behind nginx's round-robin pool (deploy/nginx/
// toolshed-stateless.conf): no session ids, requests spread over every replica, every
// answer right; a replica killed between requests costs nothing.
func TestReplicasNginxStateless(t *testing.T) {
	const goSessions, tsSessions, rounds = 12, 6, 3
	rs := startReplicas(t, 3, true, goSessions+tsSessions)
	ts := rs.startTS(tsSessions, rounds, goSessions)
	ctx := context.Background()
	sessions := make([]*goSession, goSessions)
	rs.each(t, sessions, func(s *goSession) error {
		if err := rs.connectGo(ctx, s); err != nil {
			return err
		}
		if s.cs.ID() != "" {
			return fmt.Errorf("a stateless replica issued session id %q", s.cs.ID())
		}
		return rs.rounds(ctx, s, 0, rounds, false)
	})
	for _, id := range tsSessionIDs(t, ts.until(t, "paused")) {
		if id != "" {
			t.Errorf("a stateless replica issued the TypeScript client session id %q", id)
		}
	}
	entries, err := rs.nginx.Entries()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, e := range entries {
		if e.NewSession != "" {
			t.Errorf("an answer through nginx issued session id %q", e.NewSession)
		}
		if e.Method == "POST" {
			per[e.Upstreams[len(e.Upstreams)-1]]++
		}
	}
	total := 0
	for _, n := range per {
		total += n
	}
	for _, r := range rs.replicas {
		// Round robin: a third each; at least a sixth, whatever the interleaving.
		if per[r.addr]*6 < total {
			t.Errorf("%s served %d of %d POSTs: %v", r.id, per[r.addr], total, per)
		}
	}
	t.Logf("POSTs per replica before the kill: %v", per)

	rs.kill(1)
	rs.each(t, sessions, func(s *goSession) error { return rs.rounds(ctx, s, rounds, rounds, false) })
	ts.resume(t)
	for _, ev := range ts.until(t, "done") {
		if ev["step"] == "error" || ev["step"] == "mismatch" {
			t.Errorf("the TypeScript client, after a replica was killed: %v", ev)
		}
	}
}

// each runs f on new sessions numbered 0..len(sessions)-1 concurrently, failing the
// test with their errors.
func (rs *replicaSet) each(t *testing.T, sessions []*goSession, f func(*goSession) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i := range sessions {
		if sessions[i] == nil {
			sessions[i] = &goSession{n: i}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(sessions[i]); err != nil {
				errs[i] = fmt.Errorf("go session %d %v: %w", i, sessions[i].ids, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// rounds runs n rounds from round from on s. When expectGone, the first request must
// fail with the go-sdk's ErrSessionMissing (the server answered 404): s then connects
// again, once, and retries the round.
func (rs *replicaSet) rounds(ctx context.Context, s *goSession, from, n int, expectGone bool) error {
	for r := from; r < from+n; r++ {
		bad, err := rs.goRound(ctx, s, r)
		if expectGone && r == from {
			if !errors.Is(err, mcp.ErrSessionMissing) {
				return fmt.Errorf("the first request after its replica was killed: want the go-sdk's ErrSessionMissing (404), got %v", err)
			}
			s.cs.Close()
			s.reconnects++
			if err := rs.connectGo(ctx, s); err != nil {
				return fmt.Errorf("connecting again: %w", err)
			}
			bad, err = rs.goRound(ctx, s, r)
		}
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		if len(bad) > 0 {
			return fmt.Errorf("round %d: wrong answers: %s", r, strings.Join(bad, "; "))
		}
	}
	return nil
}

// checkAffinity checks nginx's access log: every request that carried a session id
// was answered by the replica the id names, except, once killed is down, those of its
// sessions, which a live replica answered with 404. It returns the requests that
// carried a session id, per replica.
func (rs *replicaSet) checkAffinity(t *testing.T, when string, killed *replica) map[string]int {
	t.Helper()
	entries, err := rs.nginx.Entries()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, e := range entries {
		if e.NewSession != "" && e.Session == "" && rs.owner(e.NewSession) != e.Upstreams[len(e.Upstreams)-1] {
			t.Errorf("%s: session %s was issued by %v", when, e.NewSession, e.Upstreams)
		}
		if e.Session == "" {
			continue
		}
		owner := rs.owner(e.Session)
		answered := e.Upstreams[len(e.Upstreams)-1]
		switch {
		case answered == owner:
			per[answered]++
		case killed != nil && owner == killed.addr && e.Status == "404":
		default:
			t.Errorf("%s: a %s of session %s (owner %s) was answered %s by %v (statuses %v)", when, e.Method, e.Session, owner, e.Status, e.Upstreams, e.Statuses)
		}
	}
	return per
}

// tsSessionIDs returns the session ids the TypeScript client's sessions started with.
func tsSessionIDs(t *testing.T, events []map[string]any) []string {
	t.Helper()
	var ids []string
	for _, ev := range events {
		if ev["step"] == "session" {
			id, _ := ev["id"].(string)
			ids = append(ids, id)
		}
		if ev["step"] == "error" || ev["step"] == "mismatch" {
			t.Errorf("the TypeScript client, before any replica was killed: %v", ev)
		}
	}
	return ids
}
