package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// serveRelay is the floor a Go gateway stands on. It knows nothing of MCP: it carries
// each message between the client and the upstream (the command line upstream) and
// does nothing else, so what it adds to a call is the hop's cost alone, and what a
// gateway adds above it is the gateway's own work. Modes:
//   - "stdio": two goroutines copying bytes, client to upstream and back;
//   - "http" (on addr): net/http, each POST's message written to the upstream and the
//     upstream's next line returned as the JSON answer;
//   - "rawhttp" (on addr): the same over a hand-written HTTP/1.1 loop that reads a
//     request line, headers and a Content-Length body and nothing else. It is not a
//     server anyone should expose; it shows what net/http's own machinery costs.
//
// One call at a time, as the benchmark makes them.
func serveRelay(mode, addr string, upstream []string) error {
	cmd := exec.Command(upstream[0], upstream[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if mode == "stdio" {
		go io.Copy(in, os.Stdin)
		_, err := io.Copy(os.Stdout, out)
		return err
	}
	r := &relay{in: in, out: bufio.NewReader(out)}
	switch mode {
	case "http":
		return http.ListenAndServe(addr, r)
	case "rawhttp":
		return r.serveRaw(addr)
	}
	return fmt.Errorf("unknown relay mode %q", mode)
}

// relay hands one message at a time to the upstream.
type relay struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

// exchange writes msg to the upstream and returns its answer, or nil for a notification.
func (r *relay) exchange(msg []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.in.Write(append(bytes.TrimSpace(msg), '\n')); err != nil {
		return nil, err
	}
	if !bytes.Contains(msg, []byte(`"id"`)) {
		return nil, nil
	}
	return r.out.ReadBytes('\n')
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Method != http.MethodPost {
		http.Error(w, "POST a JSON-RPC message", http.StatusBadRequest)
		return
	}
	answer, err := r.exchange(body)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
	case answer == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}
}

func (r *relay) serveRaw(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go r.serveRawConn(c)
	}
}

func (r *relay) serveRawConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		length := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				break
			}
			if k, v, ok := strings.Cut(string(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if length < 0 || length > 1<<20 {
			return
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		answer, err := r.exchange(body)
		switch {
		case err != nil:
			return
		case answer == nil:
			c.Write([]byte("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"))
		default:
			c.Write(append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(answer))+"\r\n\r\n"), answer...))
		}
	}
}
