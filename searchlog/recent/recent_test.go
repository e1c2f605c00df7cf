package recent

import (
	"fmt"
	"testing"
	"time"
)

func TestFound(t *testing.T) {
	var s Searches
	s.Remember("a", "open an issue", []string{"github__create_issue", "github__list_issues"})
	s.Remember("a", "list issues", []string{"github__list_issues"})
	s.Remember("b", "search code", []string{"github__search_code"})
	s.Remember("", "no key", []string{"x"})
	s.Remember("c", "found nothing", nil)
	for _, tc := range []struct {
		key, tool string
		rank      int
		query     string
	}{
		{"a", "github__list_issues", 1, "list issues"}, // the best rank, the newest query
		{"a", "github__create_issue", 1, "open an issue"},
		{"a", "github__search_code", 0, ""}, // another client's search
		{"b", "github__search_code", 1, "search code"},
		{"", "x", 0, ""},
		{"c", "anything", 0, ""},
	} {
		if rank, query := s.Found(tc.key, tc.tool); rank != tc.rank || query != tc.query {
			t.Errorf("Found(%q, %q) = %d %q, want %d %q", tc.key, tc.tool, rank, query, tc.rank, tc.query)
		}
	}
}

// A client's searches are bounded, and so are the clients.
func TestBounded(t *testing.T) {
	var s Searches
	for i := range Recent + 1 {
		s.Remember("a", fmt.Sprint("q", i), []string{fmt.Sprint("tool", i)})
	}
	if rank, _ := s.Found("a", "tool0"); rank != 0 {
		t.Errorf("the oldest search beyond %d is still kept", Recent)
	}
	if rank, _ := s.Found("a", fmt.Sprint("tool", Recent)); rank != 1 {
		t.Errorf("the newest search is not kept")
	}
	for i := range Clients + 1 {
		s.Remember(fmt.Sprint("client", i), "q", []string{"t"})
	}
	if rank, _ := s.Found("a", fmt.Sprint("tool", Recent)); rank != 0 {
		t.Errorf("the oldest client beyond %d is still kept", Clients)
	}
	if len(s.clients) != Clients || len(s.order) != Clients {
		t.Errorf("%d clients kept (%d in order), want %d", len(s.clients), len(s.order), Clients)
	}
}

// Searches of a windowed key tie calls only within the window; others always.
func TestWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	s := Searches{Window: time.Minute, Windowed: func(k string) bool { return k == "token" }, Now: func() time.Time { return now }}
	s.Remember("token", "old", []string{"t"})
	s.Remember("session", "old", []string{"t"})
	now = now.Add(2 * time.Minute)
	s.Remember("token", "new", []string{"u"})
	for _, tc := range []struct {
		key, tool string
		rank      int
	}{{"token", "t", 0}, {"token", "u", 1}, {"session", "t", 1}} {
		if rank, _ := s.Found(tc.key, tc.tool); rank != tc.rank {
			t.Errorf("Found(%q, %q) rank %d, want %d", tc.key, tc.tool, rank, tc.rank)
		}
	}
}
