package gateway

import (
	"strings"
	"testing"
)

// TestPrefixWriter checks that a child's stderr reaches the log line by line, each with
// its server's prefix and through the redaction rule, however its writes split it.
func TestPrefixWriter(t *testing.T) {
	long := strings.Repeat("a", maxStderrLine) + " password=s3cret"
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"lines kept", []string{"starting\nready\n"}, "[s] starting\n[s] ready\n"},
		{"partial line held", []string{"start", "ing\nrea"}, "[s] starting\n"},
		{"DSN", []string{"cannot connect to postgres://app:s3cret@db/app\n"}, "[s] cannot connect to postgres://app:xxxxx@db/app\n"},
		{"libpq keywords", []string{"dsn: host=db user=app password=s3cret dbname=app\n"}, "[s] dsn: host=db user=app password=xxxxx dbname=app\n"},
		{"key split across writes", []string{"invalid key sk-ant-api03-", "abcdefghijkl\n"}, "[s] invalid key xxxxx\n"},
		{"long line without newline", []string{long}, "[s] " + strings.Repeat("a", maxStderrLine) + " password=xxxxx\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			p := &prefixWriter{prefix: "[s] ", w: &out}
			for _, w := range tc.writes {
				if n, err := p.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := out.String(); got != tc.want {
				t.Errorf("got %q\nwant %q", tail(got), tail(tc.want))
			}
		})
	}
}

// tail is the end of s, short enough to show.
func tail(s string) string {
	if len(s) > 200 {
		return "..." + s[len(s)-200:]
	}
	return s
}
