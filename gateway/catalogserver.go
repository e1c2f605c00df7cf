package gateway

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
)

// A catalog upstream is an MCP server inside toolshed that lists the tools of a catalog
// file (definitions captured from real servers) and answers calls with an explanation
// instead of running anything. toolshed serves the built-in catalog this way when no
// upstream is configured, so tool search can be tried on a fresh machine, and --catalog
// serves any catalog file the same way.

// catalogTransport starts the in-process server of a catalog upstream and returns the
// client end of an in-memory connection to it.
func catalogTransport(ctx context.Context, name string, tools []json.RawMessage) (mcp.Transport, func(), error) {
	server := mcp.NewServer(&mcp.Implementation{Name: name + " (catalog)", Version: Version}, &mcp.ServerOptions{HasTools: true})
	// The catalog's definitions are listed as the file has them, like any upstream's.
	var listed listedTools
	server.AddReceivingMiddleware(listed.middleware)
	snap, _ := catalog.Build([]catalog.Source{{Server: name, Tools: tools}})
	for _, t := range snap.Tools() {
		tool := t
		e := newExposure(t.Raw, t.Name, t.InputSchema, nil)
		_ = listed.add(server, e.def, e.raw, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return catalogEntryResult(name, tool.Qualified), nil
		})
	}
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		return nil, nil, err
	}
	return clientT, func() { ss.Close() }, nil
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
