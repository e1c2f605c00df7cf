package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/jsonscan"
)

// A catalog upstream is an MCP server inside toolshed that lists the tools of a catalog
// file (definitions captured from real servers) and answers calls with an explanation
// instead of running anything. toolshed serves the built-in catalog this way when no
// upstream is configured, so tool search can be tried on a fresh machine, and --catalog
// serves any catalog file the same way.
//
// It is connected like any other upstream (the same client, states, calls and
// catalog assembly), but its server end is no mcp.Server: a catalog of 10,000 tools is
// hundreds of catalog upstreams, and registering each tool with the SDK (which decodes
// and checks every input schema), encoding every list as JSON-RPC and decoding it again
// in the client were a third of toolshed's CPU until its first tools/list, and most of
// what the start allocated (BenchmarkCatalogStart: 420-460 MB a start of 2,000 tools,
// 75-115 MB without). The definitions are fixed, so catalogServer works out once what
// the SDK's server would list (see newCatalogServer), answers the few requests a client
// sends on the connection itself, and hands the list to Upstream.list without a round
// trip. TestCatalogServerAsSDK holds it to the SDK's answers, byte for byte.

// catalogServer is the server end of a catalog upstream: what it lists, and how it
// answers calls.
type catalogServer struct {
	name string
	// listed are the listed definitions, by name, as an mcp.Server with these tools
	// lists them (see listedDefinition), compacted.
	listed []json.RawMessage
	// cache holds the listed definitions decoded (see newCatalogServer).
	cache *catalog.Cache
	// qualified maps each listed tool's own name to its qualified name, for the
	// answer to a call: made at the first call (calls of catalog entries are rare,
	// and a map for every catalog server was a megabyte at 10,000 tools).
	qualifiedOnce sync.Once
	qualified     map[string]string
}

// newCatalogServer works out what the catalog server of server name lists: the tools
// a catalog accepts (see catalog.Build) that the SDK's server takes too, each as
// listedDefinition writes it, sorted by name as the SDK lists them. The definitions
// are decoded once, as listed, through cache: the upstream's own count of its tokens
// and every assembly of the gateway's catalog find them there (see catalog.Cache).
func newCatalogServer(name string, tools []json.RawMessage, cache *catalog.Cache) *catalogServer {
	s := &catalogServer{name: name, cache: cache}
	// What the SDK's server would list of each tool, compacted as it writes it, into a
	// buffer that holds the whole definition from the start (compacting never
	// lengthens, so it is kept at its size, not with the slack of a grown buffer). A
	// catalog accepts a listed definition exactly when it accepts the tool as the file
	// has it: the name is the same, a schema gains only the "type" a catalog assumes,
	// and a schema that is no object does not compact. A tool without a string name is
	// one no catalog accepts.
	listed := make([]json.RawMessage, 0, len(tools))
	for _, raw := range tools {
		var toolName []byte
		jsonscan.Members(raw, func(key string, val []byte) bool {
			if key == "name" {
				toolName = val // the last, as a catalog reads it
			}
			return true
		})
		if len(toolName) == 0 || toolName[0] != '"' {
			continue
		}
		src := listedDefinition(raw, jsonscan.Unquote(toolName))
		def := bytes.NewBuffer(make([]byte, 0, len(src)))
		if json.Compact(def, src) != nil {
			continue
		}
		listed = append(listed, def.Bytes())
	}
	snap, _ := cache.Build([]catalog.Source{{Server: name, Tools: listed}})
	var names []string
	byName := map[string]json.RawMessage{}
	var probe *mcp.Server
	for _, t := range snap.Tools() {
		if !plainSchema(t.InputSchema) {
			// The few definitions the SDK's server might refuse (an input schema whose
			// type is not "object", x-mcp-header annotations) go through its own
			// checks, on a server that is thrown away.
			if probe == nil {
				probe = mcp.NewServer(&mcp.Implementation{Name: name}, nil)
			}
			if addTool(probe, &mcp.Tool{Name: t.Name, InputSchema: json.RawMessage(t.InputSchema)}, nil) != nil {
				continue
			}
		}
		names = append(names, t.Name) // a catalog has no two tools of one name
		byName[t.Name] = t.Raw
	}
	slices.Sort(names)
	for _, n := range names {
		s.listed = append(s.listed, byName[n])
	}
	s.listed = slices.Clip(s.listed) // shared with the upstream's tools: never appended to
	return s
}

// plainSchema reports whether the SDK's server takes an input schema without a doubt:
// its type is "object" (or missing, which objectSchema supplies) and it names no
// x-mcp-header.
func plainSchema(schema json.RawMessage) bool {
	if bytes.Contains(schema, []byte("x-mcp-header")) {
		return false
	}
	typ := memberValue(objectSchema(schema), "type")
	return bytes.Equal(typ, []byte(`"object"`))
}

// catalogTransport returns the client end of a connection to s.
func catalogTransport(s *catalogServer) mcp.Transport { return catalogConnector{s} }

type catalogConnector struct{ s *catalogServer }

func (c catalogConnector) Connect(context.Context) (mcp.Connection, error) {
	return &catalogConn{s: c.s, out: make(chan jsonrpc.Message, 8), done: make(chan struct{})}, nil
}

// catalogConn is a client's connection to a catalogServer: each request is answered as
// it is written, and the answer waits for the client's next Read.
type catalogConn struct {
	s     *catalogServer
	out   chan jsonrpc.Message
	done  chan struct{}
	close sync.Once
}

var errCatalogClosed = errors.New("the catalog server's connection is closed")

func (c *catalogConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.out:
		return m, nil
	case <-c.done:
		return nil, errCatalogClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *catalogConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil // notifications, and answers to requests it never sends
	}
	resp := &jsonrpc.Response{ID: req.ID}
	resp.Result, resp.Error = c.s.answer(req.Method, req.Params)
	select {
	case c.out <- resp:
		return nil
	case <-c.done:
		return errCatalogClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *catalogConn) Close() error {
	c.close.Do(func() { close(c.done) })
	return nil
}

func (c *catalogConn) SessionID() string { return "" }

// answer returns the result of a request, or its error, as an mcp.Server with the
// catalog's tools (and nothing else) answers it.
func (s *catalogServer) answer(method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		version := p.ProtocolVersion
		if version == "" {
			version = UpstreamProtocol
		}
		return marshal(&mcp.InitializeResult{
			ProtocolVersion: version,
			Capabilities:    &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}},
			ServerInfo:      &mcp.Implementation{Name: s.name + " (catalog)", Version: Version},
		})
	case "ping", "logging/setLevel":
		return json.RawMessage(`{}`), nil
	case "tools/list":
		// Written by hand: encoding/json would escape <, > and & in the definitions.
		page := []byte(`{"tools":[`)
		for i, t := range s.listed {
			if i > 0 {
				page = append(page, ',')
			}
			page = append(page, t...)
		}
		return append(page, "]}"...), nil
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(params, &p)
		s.qualifiedOnce.Do(func() {
			snap, _ := s.cache.Build([]catalog.Source{{Server: s.name, Tools: s.listed}})
			s.qualified = make(map[string]string, snap.Len())
			for _, t := range snap.Tools() {
				s.qualified[t.Name] = t.Qualified
			}
		})
		q, ok := s.qualified[p.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + strconvQuote(p.Name)}
		}
		return marshal(catalogEntryResult(s.name, q))
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
}

// strconvQuote quotes a tool name as the SDK's error does.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// catalogEntryResult is what a call of a catalog entry gets: an error in the shape of
// every other (see errorResult), so that a client reading the structured content learns
// why as it does for any refused call. The code is tool_error, as for any error result
// of a tool's own server: here the catalog server answers for the missing real one,
// and retrying cannot help, which unavailable would advise.
func catalogEntryResult(server, tool string) *mcp.CallToolResult {
	return errorResult(ToolError, "%s is a catalog entry: toolshed has its definition, captured from the real %s server, but no running server behind it. "+
		"To call it, configure the real server in toolshed's config (mcpServers).", tool, server)
}
