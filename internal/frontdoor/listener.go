package frontdoor

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// capListener caps the connections served at once, in all and per client address.
//
// Past the total cap, Accept waits: new connections wait in the kernel's listen queue
// until one ends, as with netutil.LimitListener. A client address past its share is
// different: its new connection is accepted and, out of the count, answered 503 and
// closed (see refuse), so that the listen queue keeps moving for everyone else.
// Without the share, one client that opens connections and sends half a request's
// headers on each (held up to the header timeout, and opened again) takes every slot,
// and a health probe from anywhere else waits in the queue until it times out.
type capListener struct {
	net.Listener
	slots    chan struct{} // one per connection served; nil: no total cap
	refusing chan struct{} // one per refusal under way (see refuse)
	share    int           // connections per client address; 0: no share
	total    int           // the total cap, for the refusal's message

	mu  sync.Mutex
	per map[netip.Prefix]int

	closeOnce sync.Once
	done      chan struct{}
}

func newCapListener(ln net.Listener, total, share int) *capListener {
	l := &capListener{Listener: ln, share: share, total: total, per: map[netip.Prefix]int{}, done: make(chan struct{}),
		refusing: make(chan struct{}, maxRefusing)}
	if total > 0 {
		l.slots = make(chan struct{}, total)
	}
	return l
}

// Accept waits for a free slot, then returns the next connection of a client address
// within its share; those past it are refused on the way.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.release()
			return nil, err
		}
		client, counted := l.take(c.RemoteAddr())
		if !counted {
			l.release()
			l.refuse(c, client)
			continue
		}
		return &capConn{Conn: c, l: l, client: client}, nil
	}
}

// take counts a connection against its client's share, and reports false when the
// client already holds its share. An address that is not IP (a Unix socket's) is one
// client.
func (l *capListener) take(addr net.Addr) (netip.Prefix, bool) {
	client := clientOf(addr)
	if l.share <= 0 {
		return client, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per[client] >= l.share {
		return client, false
	}
	l.per[client]++
	return client, true
}

// clientOf is the client a connection's remote address counts as: its IPv4 address, or
// the /64 of its IPv6 address (one host's usual allocation, which it may draw addresses
// from at will).
func clientOf(addr net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// refuseWait bounds each step of a refusal: reading the request's headers, writing the
// answer, and waiting for the client to close.
const refuseWait = time.Second

// maxRefusing bounds the refusals under way at once; past it, a connection is closed
// without an answer. A flooding client's connections past its share hold one each for
// up to refuseWait, so its own later ones, and only they in practice, go unanswered.
const maxRefusing = 64

// refuse answers a connection past its client's share with 503 and closes it, in a
// goroutine of its own: Accept must not wait on a client. It reads the request's
// headers first, for a while: an answer that comes before the request is taken by Go's
// HTTP client for a fault of the connection ("unsolicited response"), not as the
// answer. After the answer it closes its side and waits for the client to close
// theirs, as net/http does: closing with unread data would reset the connection, and
// the client could lose the answer.
func (l *capListener) refuse(c net.Conn, client netip.Prefix) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	body := fmt.Sprintf("too many connections from %s: one client address may hold %d of the server's %d connections at once (--max-connections-per-client); close idle ones, or reuse them. Behind a reverse proxy or NAT, every client shares its address: raise --max-connections-per-client to --max-connections and let the proxy limit each client\n",
		clientName(client), l.share, l.total)
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(refuseWait))
		readHead(c)
		c.SetWriteDeadline(time.Now().Add(refuseWait))
		if _, err := fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(refuseWait))
		io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

// readHead reads r until the end of a request's headers (an empty line), an error, or
// 64 KiB.
func readHead(r io.Reader) {
	br := bufio.NewReaderSize(io.LimitReader(r, 64<<10), 4096)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
			return
		}
	}
}

// clientName is a client for a message: its IPv4 address, or its IPv6 /64.
func clientName(p netip.Prefix) string {
	switch {
	case !p.IsValid():
		return "this address"
	case p.Addr().Is4():
		return p.Addr().String()
	}
	return p.String()
}

func (l *capListener) release() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *capListener) free(client netip.Prefix) {
	if l.share > 0 {
		l.mu.Lock()
		if l.per[client]--; l.per[client] <= 0 {
			delete(l.per, client)
		}
		l.mu.Unlock()
	}
	l.release()
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *capListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// capConn gives its slot back when it is closed, once.
type capConn struct {
	net.Conn
	l         *capListener
	client    netip.Prefix
	closeOnce sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.free(c.client) })
	return err
}
