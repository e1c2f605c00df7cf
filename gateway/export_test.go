package gateway

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LineTransport is the stdio front's transport on r and w instead of stdin and stdout:
// Gateway.Connect(ctx, LineTransport(r, w, closeIO), profile) serves a client as
// ServeStdio does, for the tests that drive the stdio front byte by byte. closeIO ends
// r and w.
func LineTransport(r io.Reader, w io.Writer, closeIO func() error) mcp.Transport {
	return lineTransport{r, w, closeIO}
}

type lineTransport struct {
	r       io.Reader
	w       io.Writer
	closeIO func() error
}

func (t lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return newLineConn(t.r, t.w, t.closeIO), nil
}
