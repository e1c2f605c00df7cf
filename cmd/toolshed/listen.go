package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/toolshed/toolshed/internal/listenaddr"
)

// listen opens the listener of a listen flag (its name and value), and warns on stderr
// when it is reachable from other machines with no authentication.
func listen(flagName, value string, authenticated bool, stderr io.Writer) (net.Listener, error) {
	addr, err := listenaddr.Parse(value)
	if err != nil {
		return nil, usageErr("%s %v", flagName, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && !authenticated {
		fmt.Fprintf(stderr, "toolshed: warning: listening on %s without authentication; set --token (or $TOOLSHED_TOKEN)\n", addr)
	}
	return ln, nil
}

// serveUntil serves h on ln until ctx ends, then stops accepting and lets the requests
// under way finish for up to drain. Requests still running then are cut, and it
// reports so.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err // never http.ErrServerClosed: only this function shuts srv down
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(shutdown)
	<-served
	if err != nil {
		srv.Close()
		return fmt.Errorf("requests were still running after the drain timeout (%v, --drain-timeout); their connections were closed", drain)
	}
	return nil
}
