package main

import (
	"context"
	"errors"
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

// serveUntil serves h on ln until ctx ends, then lets requests under way finish for up
// to five seconds.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
