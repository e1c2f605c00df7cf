// Package listenaddr reads the address a command listens on.
package listenaddr

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Parse turns a listen flag's value into an address to listen on: a bare port or
// ":port" binds 127.0.0.1 only, so that nothing is exposed by accident; a host must be
// given to listen elsewhere.
func Parse(v string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%q: %s; give a port (8080), a host and port (127.0.0.1:8080), or 0.0.0.0:8080 to listen on every interface", v, why)
	}
	addr := v
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad(err.Error())
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || port == "" {
		return bad(fmt.Sprintf("the port %q is not a number from 0 to 65535", port))
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// URL returns the http:// URL (scheme, host and port, no path) at which a user on this
// machine reaches a listener at addr, as a net.Listener reports it. A wildcard address
// (0.0.0.0 or ::, which Go reports as [::]) is not one a browser or client can open,
// so it gets the loopback address, and everywhere reports that the listener takes
// connections on every interface (other machines use this machine's address). Go
// listens on :: for both IPv4 and IPv6, so 127.0.0.1 reaches either wildcard.
func URL(addr net.Addr) (url string, everywhere bool) {
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port)), true
	}
	return "http://" + addr.String(), false
}
