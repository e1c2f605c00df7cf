package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// The clients of TestProtocolMatrix.

// matrixClient is what a cell needs of a client, whichever SDK it is built with.
type matrixClient interface {
	// version is the protocol version the client negotiated.
	version() string
	// listTools returns the tools/list result as the client got it.
	listTools(ctx context.Context) (json.RawMessage, error)
	// callTool returns the CallToolResult as the client got it, or the JSON-RPC error;
	// when ctx ends first, the client cancels the call.
	callTool(ctx context.Context, name string, args any) (json.RawMessage, error)
	// listChanges counts the tool list changes the client was told of.
	listChanges() int
	// elicitations returns the messages of the elicitations the client answered.
	elicitations() []string
}

// matrixClients are the clients of the matrix; start connects one to a URL (HTTP
// front) or runs a command line and speaks to it over stdio.
var matrixClients = []struct {
	name, want string // want: the protocol version the client must negotiate
	start      func(t *testing.T, target ...string) matrixClient
}{
	{"go-2025-11-25", "2025-11-25", func(t *testing.T, target ...string) matrixClient { return goMatrixClient(t, "2025-11-25", target) }},
	{"go-default", "2026-07-28", func(t *testing.T, target ...string) matrixClient { return goMatrixClient(t, "", target) }},
	{"ts2-auto", "2026-07-28", func(t *testing.T, target ...string) matrixClient {
		return tsMatrixClient{testupstream.TS2MatrixClient(t, "auto", target...)}
	}},
}

// goClient is the go-sdk (v1.8.0) client. It declares elicitation and answers like the
// TS client: accept {yes: true} when the schema asks for "yes", else decline.
type goClient struct {
	cs      *mcp.ClientSession
	mu      sync.Mutex
	changes int
	asked   []string
}

func goMatrixClient(t *testing.T, pin string, target []string) *goClient {
	c := &goClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolshed-matrix-go", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.changes++
			c.mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.asked = append(c.asked, req.Params.Message)
			c.mu.Unlock()
			if s, ok := req.Params.RequestedSchema.(map[string]any); ok {
				if props, _ := s["properties"].(map[string]any); props["yes"] != nil {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"yes": true}}, nil
				}
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	var transport mcp.Transport
	if len(target) == 1 && strings.HasPrefix(target[0], "http") {
		transport = &mcp.StreamableClientTransport{Endpoint: target[0]}
	} else {
		cmd := exec.Command(target[0], target[1:]...)
		testupstream.OwnGraceful(t, cmd)
		transport = &mcp.CommandTransport{Command: cmd}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if pin != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: pin}
	}
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("go-sdk client (protocol %q) cannot connect to %v: %v", pin, target, err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

func (c *goClient) version() string { return c.cs.InitializeResult().ProtocolVersion }

func (c *goClient) listTools(ctx context.Context) (json.RawMessage, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c *goClient) callTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c *goClient) listChanges() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

func (c *goClient) elicitations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

type tsMatrixClient struct{ c *testupstream.TS2Session }

func (c tsMatrixClient) version() string { return c.c.Version }
func (c tsMatrixClient) listTools(ctx context.Context) (json.RawMessage, error) {
	return c.c.ListTools(ctx)
}
func (c tsMatrixClient) callTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	return c.c.CallTool(ctx, name, args)
}
func (c tsMatrixClient) listChanges() int       { return c.c.ListChanges() }
func (c tsMatrixClient) elicitations() []string { return c.c.Elicitations() }
