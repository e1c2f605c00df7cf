package listenaddr

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"8080", "127.0.0.1:8080"},
		{":8080", "127.0.0.1:8080"},
		{"0", "127.0.0.1:0"},
		{"0.0.0.0:9000", "0.0.0.0:9000"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"localhost:8080", "localhost:8080"},
		{"[::1]:7", "[::1]:7"},
		{"[::]:8080", "[::]:8080"},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"1:2:3", "::1", "[::1", "[::1]8080", "host:80:90", "garbage", "localhost", "99999", "-1", "8080x", "", ":", "host:", "http"} {
		got, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want an error", in, got)
			continue
		}
		msg := err.Error()
		for _, hint := range []string{fmt.Sprintf("%q", in), "8080", "127.0.0.1:8080", "0.0.0.0:8080"} {
			if !strings.Contains(msg, hint) {
				t.Errorf("Parse(%q) error %q lacks %s", in, msg, hint)
			}
		}
	}
}
