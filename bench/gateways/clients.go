package main

// The benchmark's clients: raw JSON-RPC over a gateway's stdio, Streamable HTTP or HTTP+SSE, with no SDK.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// client is an MCP client that sends JSON-RPC and returns result bytes.
type client interface {
	call(method, params string) (json.RawMessage, error)
	notify(method string) error
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (r *response) outcome() (json.RawMessage, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("error %s", r.Error)
	}
	return r.Result, nil
}

// stdioClient talks newline-delimited JSON-RPC to a process it started.
type stdioClient struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startStdio(dir, name string, args ...string) (*stdioClient, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stderr, cmd.Env = dir, io.Discard, isolatedEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &stdioClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

func (c *stdioClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (c *stdioClient) call(method, params string) (json.RawMessage, error) {
	c.next++
	if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.next, method, params); err != nil {
		return nil, err
	}
	id := fmt.Sprint(c.next)
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var r response
		if json.Unmarshal(line, &r) == nil && string(r.ID) == id {
			return r.outcome()
		}
	}
}

func (c *stdioClient) notify(method string) error {
	_, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	return err
}

// streamableClient speaks Streamable HTTP, reading JSON or server-sent event answers.
// With modern set it negotiates as the go-sdk's client does with its default options
// (see negotiate): MCP 2026-07-28 when the server offers it, each request then standing
// alone (no session; the version and capabilities in its _meta and headers), else a
// 2025-11-25 session.
type streamableClient struct {
	url, session string
	next         int
	modern       bool
	// protocol is the version negotiated: modernProtocol, or "" for a session of
	// 2025-11-25 (the handshake's initialize).
	protocol string
}

// modernProtocol is MCP 2026-07-28, whose requests carry their version and client
// capabilities in _meta (the envelope) and in headers, without initialize or session.
const modernProtocol = "2026-07-28"

// envelope is the _meta member the client puts first in each modern request's params.
const envelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

func (c *streamableClient) post(body string, header ...string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp, nil
}

func (c *streamableClient) call(method, params string) (json.RawMessage, error) {
	c.next++
	var header []string
	if c.protocol == modernProtocol || method == "server/discover" {
		// The envelope goes first in params, and the headers say the version, the
		// method and (for a tool call) the tool, as the go-sdk's client sends them.
		name := toolName(params) // before the envelope, whose clientInfo has a name too
		if inner := strings.TrimSpace(params[1 : len(params)-1]); inner == "" {
			params = "{" + envelope + "}"
		} else {
			params = "{" + envelope + "," + inner + "}"
		}
		header = []string{"MCP-Protocol-Version", modernProtocol, "Mcp-Method", method}
		if method == "tools/call" {
			header = append(header, "Mcp-Name", name)
		}
	}
	resp, err := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next, method, params), header...)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	id := fmt.Sprint(c.next)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var r response
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return nil, err
		}
		return r.outcome()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var r response
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &r) == nil && string(r.ID) == id {
			return r.outcome()
		}
	}
	return nil, fmt.Errorf("%s: the stream ended without an answer (%v)", method, sc.Err())
}

// negotiate does what the go-sdk's client does on Connect with default options: it
// asks server/discover (enveloped at 2026-07-28), speaks 2026-07-28 when the server
// lists it, and otherwise falls back to initialize at 2025-11-25 (a refusal of discover,
// an error or HTTP 4xx, means an older server too).
func (c *streamableClient) negotiate() error {
	res, err := c.call("server/discover", `{}`)
	if err == nil {
		var d struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		json.Unmarshal(res, &d)
		if slices.Contains(d.SupportedVersions, modernProtocol) {
			c.protocol = modernProtocol
			return nil
		}
	}
	c.protocol = ""
	if _, err := c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`); err != nil {
		return err
	}
	return c.notify("notifications/initialized")
}

func (c *streamableClient) notify(method string) error {
	resp, err := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// sseClient speaks the HTTP+SSE transport (MCP 2024-11-05): one event stream for
// answers, and a POST endpoint for requests.
type sseClient struct {
	base, path string
	endpoint   string
	answers    chan response
	next       int
}

func (c *sseClient) open() error {
	req, _ := http.NewRequest(http.MethodGet, c.base+c.path, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET %s: HTTP %d", c.path, resp.StatusCode)
	}
	endpoint := make(chan string, 1)
	c.answers = make(chan response, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
				if event == "endpoint" {
					endpoint <- data
					continue
				}
				var r response
				if json.Unmarshal([]byte(data), &r) == nil && r.ID != nil {
					c.answers <- r
				}
			case line == "":
				event = ""
			}
		}
		close(c.answers)
	}()
	select {
	case e := <-endpoint:
		c.endpoint = c.base + e
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("no endpoint event within 30s")
	}
}

func (c *sseClient) post(body string) error {
	if c.endpoint == "" {
		if err := c.open(); err != nil {
			return err
		}
	}
	resp, err := httpClient.Post(c.endpoint, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST: HTTP %d", resp.StatusCode)
	}
	return nil
}

func (c *sseClient) call(method, params string) (json.RawMessage, error) {
	c.next++
	if err := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next, method, params)); err != nil {
		return nil, err
	}
	id := fmt.Sprint(c.next)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case r, ok := <-c.answers:
			if !ok {
				return nil, errors.New("the event stream ended")
			}
			if string(r.ID) == id {
				return r.outcome()
			}
		case <-timeout:
			return nil, fmt.Errorf("%s: no answer within 60s", method)
		}
	}
}

func (c *sseClient) notify(method string) error {
	return c.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method))
}

// toolName is the name in tools/call params the benchmark wrote itself (see main.go:
// the only "name" member, a plain string), found without decoding the params, as a
// client that builds the request knows it: the figure is then the gateway's, not the
// cost of this client reading back what it wrote.
func toolName(params string) string {
	_, rest, ok := strings.Cut(params, `"name":"`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return name
}
