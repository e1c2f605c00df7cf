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
