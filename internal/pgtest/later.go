package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Later returns the URL of a fresh database on s at a loopback port where nothing
// listens yet, as a database that is down, and up, which brings it up: from then on the
// port forwards every connection to s. A client sees a server that refuses connections,
// then the real one. The forwarder stops when tb ends.
func (s *Server) Later(tb testing.TB) (dsn string, up func()) {
	tb.Helper()
	real, err := url.Parse(s.Database(tb))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	target := real.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	down := *real
	down.Host = addr
	var once sync.Once
	return down.String(), func() {
		tb.Helper()
		once.Do(func() {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				tb.Fatalf("pgtest: bringing the database up at %s: %v", addr, err)
			}
			f := &forwarder{ln: ln, target: target, conns: map[net.Conn]bool{}}
			tb.Cleanup(f.close)
			go f.serve()
		})
	}
}

// forwarder copies each connection it accepts to and from target.
type forwarder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
}

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		if !f.track(c, d) {
			return
		}
		pipe := func(dst, src net.Conn) {
			defer f.wg.Done()
			io.Copy(dst, src) // until either side closes or resets its connection
			dst.Close()
			src.Close()
		}
		go pipe(c, d)
		go pipe(d, c)
	}
}

// track records the connections to close at the end, and the two copies between them
// to wait for; false when the end has come.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = true
	}
	f.wg.Add(2)
	return true
}

func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
