package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevels are MCP's logging levels (RFC 5424's severities), least severe first: the
// only values logging/setLevel takes.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// checkLogLevel refuses a logging/setLevel whose level is not one of MCP's, with
// invalid params, as the TypeScript SDK's servers do. The Go SDK stores any string, and
// an unknown level then filters log messages as if it were debug, so a client that
// mistyped "warn" would get every message while believing it asked for fewer.
func checkLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			var level mcp.LoggingLevel
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				level = p.Level
			}
			if !slices.Contains(logLevels, level) {
				names := make([]string, len(logLevels))
				for i, l := range logLevels {
					names[i] = string(l)
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("logging/setLevel: %q is not a logging level; use one of %s", level, strings.Join(names, ", "))}
			}
		}
		return next(ctx, method, req)
	}
}
