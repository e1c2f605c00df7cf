package gateway

import (
	"testing"
	"time"
)

// TestApprovalsPerPrincipal: a principal that asks and never answers loses its own
// oldest questions past maxApprovalsPerPrincipal, never another principal's, and every
// question still waiting is answered once.
func TestApprovalsPerPrincipal(t *testing.T) {
	var a approvals
	now := time.Now()
	alice, mallory := principal{profile: "a"}, principal{profile: "m"}
	aliceState := a.issue(approvalStatePrefix, alice, "srv__write", []byte(`{}`), now)
	var flood []string
	for range 5 * maxApprovalsPerPrincipal {
		flood = append(flood, a.issue(approvalStatePrefix, mallory, "srv__write", []byte(`{}`), now))
	}
	if got := a.per[mallory]; got != maxApprovalsPerPrincipal {
		t.Fatalf("mallory has %d questions waiting, want %d", got, maxApprovalsPerPrincipal)
	}
	if !a.take(aliceState, alice, "srv__write", []byte(`{}`), now) {
		t.Fatal("alice's question was dropped by another principal's flood")
	}
	if a.take(flood[0], mallory, "srv__write", []byte(`{}`), now) {
		t.Error("mallory's oldest question outlived the per-principal bound")
	}
	last := flood[len(flood)-1]
	if !a.take(last, mallory, "srv__write", []byte(`{}`), now) || a.take(last, mallory, "srv__write", []byte(`{}`), now) {
		t.Error("mallory's newest question is not answered exactly once")
	}
	if got := a.per[mallory]; got != maxApprovalsPerPrincipal-1 {
		t.Errorf("mallory has %d questions waiting after one answer, want %d", got, maxApprovalsPerPrincipal-1)
	}
	// Expired questions leave the table, and their count, as the next is asked.
	later := now.Add(pendingTimeout + time.Second)
	a.issue(approvalStatePrefix, alice, "srv__write", []byte(`{}`), later)
	if len(a.asked) != 1 || a.per[mallory] != 0 || a.per[alice] != 1 {
		t.Errorf("after expiry: %d waiting, counts %v; want alice's one", len(a.asked), a.per)
	}
}
