package listenaddr

import (
	"fmt"
	"net"
	"strconv"
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

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		addr       net.Addr
		want       string
		everywhere bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080", false},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 8080}, "http://[::1]:8080", false},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 80}, "http://192.168.1.5:80", false},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080", true},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080", true},
	} {
		if got, everywhere := URL(tc.addr); got != tc.want || everywhere != tc.everywhere {
			t.Errorf("URL(%s) = %q, %v; want %q, %v", tc.addr, got, everywhere, tc.want, tc.everywhere)
		}
	}
	// What a listener on 0.0.0.0 reports is [::], where no client can connect.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if got, everywhere := URL(ln.Addr()); got != want || !everywhere {
		t.Errorf("URL of a listener on 0.0.0.0 (%s) = %q, %v; want %q, true", ln.Addr(), got, everywhere, want)
	}
}
