package testoidc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// ErrClient is wrapped by the error of RunClientV1 when the client did not finish: it
// failed, or stopped without saying why.
var ErrClient = errors.New("testoidc: the TypeScript SDK client did not finish")

// A ClientRun is what the TypeScript SDK client of RunClientV1 did.
type ClientRun struct {
	// AuthorizeURL is the authorization request the client sent the user to.
	AuthorizeURL string
	// Tools are the names of the tools it listed after signing in.
	Tools []string
	// Result is the text of its call of ClientOptions.Call, if any.
	Result string
}

// ClientOptions is what the client of RunClientV1 does once signed in. The zero value
// lists the tools only.
type ClientOptions struct {
	Call      string         // a tool to call
	Arguments map[string]any // its arguments
}

// RunClientV1 runs an MCP client built on the TypeScript SDK v1's OAuth support
// (client-v1.mjs: an OAuthClientProvider given to StreamableHTTPClientTransport as
// authProvider) against the protected MCP endpoint mcpURL, and plays its user with
// Login: the client finds p from mcpURL's 401, registers dynamically, and prints the
// authorization URL; Login signs in there, and its redirect goes to the client's
// stdin, after which the client calls finishAuth, connects again, lists the tools and
// makes the call of opts. The client's own error (from its SDK) is returned, wrapping
// ErrClient; its output never holds a token, a code or a secret.
func (p *Provider) RunClientV1(t testing.TB, ctx context.Context, mcpURL string, opts ClientOptions) (*ClientRun, error) {
	t.Helper()
	env := []string{"TESTOIDC_MCP_URL=" + mcpURL}
	if opts.Call != "" {
		args, err := json.Marshal(opts.Arguments)
		if err != nil {
			return nil, err
		}
		env = append(env, "TESTOIDC_CALL="+opts.Call, "TESTOIDC_ARGS="+string(args))
	}
	cmd := nodeCommand(t, "client-v1.mjs", env)
	testupstream.Own(t, cmd)
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testoidc: starting the client: %w", err)
	}
	run, runErr := p.drive(ctx, stdout, stdin)
	stdin.Close()
	io.Copy(io.Discard, stdout)
	// The client ends on its own once done or failed; the context bounds it.
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-waited
		err = ctx.Err()
	}
	if runErr == nil && err != nil {
		runErr = fmt.Errorf("%w: %v: %s", ErrClient, err, strings.TrimSpace(stderr.String()))
	}
	return run, runErr
}

// drive reads the client's lines and answers its authorization request with Login.
func (p *Provider) drive(ctx context.Context, stdout io.Reader, stdin io.Writer) (*ClientRun, error) {
	run := &ClientRun{}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		kind, text, _ := strings.Cut(strings.TrimPrefix(lines.Text(), "testoidc-client: "), " ")
		switch kind {
		case "authorize":
			run.AuthorizeURL = text
			redirect, err := p.Login(ctx, text)
			if err != nil {
				return run, err
			}
			if _, err := io.WriteString(stdin, redirect+"\n"); err != nil {
				return run, fmt.Errorf("testoidc: writing to the client: %w", err)
			}
		case "tools":
			run.Tools = strings.Fields(text)
		case "result":
			if err := json.Unmarshal([]byte(text), &run.Result); err != nil {
				return run, fmt.Errorf("testoidc: the client's result: %w", err)
			}
		case "done":
			return run, nil
		case "error":
			return run, fmt.Errorf("%w: %s", ErrClient, text)
		}
	}
	return run, fmt.Errorf("%w: it stopped without saying why", ErrClient)
}
