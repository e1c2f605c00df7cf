//go:build e2e && unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The recorder is a stdio MCP server written with the official Go SDK that logs every
// JSON-RPC message it reads and writes (the SDK's own LoggingTransport) plus what its
// tool handlers saw, so that a test can prove what reached the upstream through
// toolshed: a client's notifications/cancelled above all, which no npm reference server
// makes observable. It is this test binary run again with recorderEnv set (see init):
// no extra build, and the same go-sdk toolshed itself uses.

// recorderEnv names the log file of a recorder; set, the test binary serves as one.
const recorderEnv = "TOOLSHED_E2E_RECORDER"

func init() {
	if path := os.Getenv(recorderEnv); path != "" {
		if err := runRecorder(path); err != nil {
			fmt.Fprintln(os.Stderr, "recorder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// recorderLog is the recorder's log: one line per message, "read: JSON" or
// "write: JSON" as the SDK's LoggingTransport writes them, and "event: TEXT" for what a
// handler saw.
type recorderLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *recorderLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *recorderLog) event(format string, args ...any) {
	fmt.Fprintf(l, "event: "+format+"\n", args...)
}

type blockArgs struct {
	Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to block at most (default 120)"`
}

func runRecorder(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	log := &recorderLog{w: f}
	server := mcp.NewServer(&mcp.Implementation{Name: "recorder", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "block",
		Description: "Blocks until the call is cancelled (or the given seconds pass), after one progress notification saying it started.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in blockArgs) (*mcp.CallToolResult, any, error) {
		log.event("block started")
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 0, Message: "started"})
		}
		d := time.Duration(in.Seconds * float64(time.Second))
		if d <= 0 {
			d = 2 * time.Minute
		}
		select {
		case <-ctx.Done():
			log.event("block ended: %v", ctx.Err())
			return nil, nil, ctx.Err()
		case <-time.After(d):
			log.event("block ended: time is up")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "unblocked"}}}, nil, nil
		}
	})
	mcp.AddTool(server, &mcp.Tool{Name: "ping", Description: "Answers pong."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			log.event("ping")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	return server.Run(context.Background(), &mcp.LoggingTransport{Transport: &mcp.StdioTransport{}, Writer: log})
}

// recorderMessage is one JSON-RPC message in a recorder's log.
type recorderMessage struct {
	Dir    string // "read" or "write"
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// readRecorder returns the messages and the handler events in a recorder's log.
func readRecorder(t *testing.T, path string) (msgs []recorderMessage, events []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		t.Fatalf("reading the recorder's log: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, ev)
			continue
		}
		dir, body, ok := strings.Cut(line, ": ")
		if !ok || (dir != "read" && dir != "write") {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("recorder log line %q: %v", line, err)
		}
		msgs = append(msgs, recorderMessage{Dir: dir, ID: m.ID, Method: m.Method, Params: m.Params})
	}
	return msgs, events
}

// waitRecorder polls a recorder's log until done accepts it or a minute passes, and
// returns what it read last.
func waitRecorder(t *testing.T, path string, done func([]recorderMessage, []string) bool) ([]recorderMessage, []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		msgs, events := readRecorder(t, path)
		if done(msgs, events) || time.Now().After(deadline) {
			return msgs, events
		}
		time.Sleep(100 * time.Millisecond)
	}
}
