package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/toolshed/toolshed/internal/frontdoor"
	"github.com/toolshed/toolshed/internal/listenaddr"
)

// doorFlags are the flags of an HTTP front's checks and limits (see frontdoor), the same
// for serve and proxy.
type doorFlags struct {
	origins, hosts listFlag
	maxConns       int
	perClient      int
	bodyTimeout    time.Duration
}

// doorSynopsis names the door flags in a command's usage line.
const doorSynopsis = "[--token TOKEN] [--allow-host HOST]... [--allow-origin ORIGIN]... [--max-connections N] [--max-connections-per-client N] [--body-timeout DURATION]"

func addDoorFlags(fs *flag.FlagSet) *doorFlags {
	d := &doorFlags{}
	fs.Var(&d.origins, "allow-origin", "browser `ORIGIN` (scheme://host[:port]) allowed to call the HTTP endpoint (repeatable)")
	fs.Var(&d.hosts, "allow-host", "`HOST` name accepted in the Host header besides localhost, 127.0.0.1 and [::1] (and IP addresses beyond loopback): a reverse proxy's, or the DNS name of a listener beyond loopback without a token (repeatable; * accepts any, which turns off DNS rebinding protection)")
	fs.IntVar(&d.maxConns, "max-connections", frontdoor.DefaultMaxConns, "serve at most `N` HTTP connections at once; more wait for one to end")
	fs.IntVar(&d.perClient, "max-connections-per-client", 0, "let one client address (an IPv4 address or an IPv6 /64) hold at most `N` of --max-connections; its connections past them are answered 503 and closed (default: half of --max-connections; behind a reverse proxy every client has the proxy's address)")
	fs.DurationVar(&d.bodyTimeout, "body-timeout", frontdoor.DefaultBodyTimeout, "a request body must arrive within `DURATION` of its headers, or its connection is closed")
	return d
}

// check validates the flags, as usage errors.
func (d *doorFlags) check() error {
	for _, o := range d.origins {
		if err := frontdoor.CheckOrigin(o); err != nil {
			return usageErr("--allow-origin %v", err)
		}
	}
	if d.maxConns < 1 {
		return usageErr("--max-connections must be at least 1, got %d", d.maxConns)
	}
	if d.perClient < 0 || d.perClient > d.maxConns {
		return usageErr("--max-connections-per-client must be from 1 to --max-connections (%d), or 0 for half of it; got %d", d.maxConns, d.perClient)
	}
	if d.bodyTimeout <= 0 {
		return usageErr("--body-timeout must be a positive duration such as 30s, got %s", d.bodyTimeout)
	}
	return nil
}

func (d *doorFlags) limits() frontdoor.Limits {
	return frontdoor.Limits{MaxConns: d.maxConns, MaxConnsPerClient: d.perClient, BodyTimeout: d.bodyTimeout}
}

// guard puts h behind the Host and origin checks of the flags, as a listener without a
// token that is not the front's own (--metrics-addr, --probe-addr): its answers say
// nothing a client sent, but a web page that rebinds its name to the machine's address
// could otherwise read them (server names and counts).
func (d *doorFlags) guard(h http.Handler) http.Handler {
	g, _ := frontdoor.Guard(h, frontdoor.Options{AllowHosts: d.hosts, AllowOrigins: d.origins, Open: true})
	return g // the origins were checked by check
}

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

// openURL is the URL ("http://HOST:PORT") at which a user on this machine reaches ln,
// and, when ln takes connections on every interface (0.0.0.0 or ::), a note saying so
// to end a start-up line with ("; it listens on every interface: ..."; "" otherwise):
// the wildcard address itself ([::]) is no URL anyone can open.
func openURL(ln net.Listener) (url, note string) {
	url, everywhere := listenaddr.URL(ln.Addr())
	if everywhere {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		note = "; it listens on every interface: other machines use this machine's address, port " + port
	}
	return url, note
}

// serveUntil serves h on ln, within lim, until ctx ends, then stops accepting and lets
// the requests under way finish for up to drain. Requests still running then are cut,
// and it reports so, saying when they were cut (late: "the drain timeout (5s,
// --drain-timeout)").
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler, lim frontdoor.Limits, drain time.Duration, late string) error {
	return serveDrain(ctx, ln, h, lim, drain, late, nil)
}

// answerGrace is how long the handlers of the requests still running at the end of a
// drain have, once told to answer (serveDrain's answer), before their connections are
// closed: they only write an error that is already known.
const answerGrace = time.Second

// serveDrain is serveUntil, but at the end of the drain, when answer is not nil, it
// first calls answer, which must make the handlers still running answer at once (as
// messages.Proxy.Stop does), and gives them answerGrace to write before it closes
// their connections: a client then gets an answer that says why, not a closed
// connection.
func serveDrain(ctx context.Context, ln net.Listener, h http.Handler, lim frontdoor.Limits, drain time.Duration, late string, answer func()) error {
	srv := lim.Server(h)
	ln = lim.Listener(ln)
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
	if err != nil && answer != nil {
		answer()
		answered, cancel := context.WithTimeout(context.Background(), answerGrace)
		defer cancel()
		if srv.Shutdown(answered) == nil {
			<-served
			return fmt.Errorf("requests were still running after %s; they were answered 529 overloaded_error, which clients retry", late)
		}
	}
	<-served
	if err != nil {
		srv.Close()
		return fmt.Errorf("requests were still running after %s; their connections were closed", late)
	}
	return nil
}
