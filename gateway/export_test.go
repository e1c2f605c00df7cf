package gateway

import (
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LineTransport is the stdio front's transport on r and w instead of stdin and stdout:
// Gateway.Connect(ctx, LineTransport(r, w, closeIO), profile) serves a client as
// ServeStdio does, for the tests that drive the stdio front byte by byte. closeIO ends
// r and w.
func LineTransport(r io.Reader, w io.Writer, closeIO func() error) mcp.Transport {
	return stdioTransport{r: r, w: w, closeIO: closeIO}
}
