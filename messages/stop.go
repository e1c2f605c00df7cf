package messages

import (
	"context"
	"errors"
	"sync"
)

// ErrStopping is the cause of the APIError of a request that Proxy.Stop ended.
var ErrStopping = errors.New("toolshed proxy is stopping")

// stopState ends the requests in flight when the proxy stops (see Proxy.Stop).
type stopState struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (s *stopState) init() {
	s.once.Do(func() { s.ctx, s.cancel = context.WithCancelCause(context.Background()) })
}

// Stop ends the requests in flight, and any that come after: each is answered at once
// with 529 overloaded_error (an "error" event when its stream has begun) saying that the
// proxy is stopping, which the Anthropic SDKs and Claude Code retry, instead of waiting
// for the upstream. It is for the end of a drain: a server that stops lets the requests
// in flight finish for as long as it can wait, then calls Stop and gives the handlers a
// moment to write their answers before it closes the connections, so that no client is
// left with a connection closed under it and no answer.
func (p *Proxy) Stop() {
	p.stop.init()
	p.stop.cancel(ErrStopping)
}

// requestContext is the context of one request: ctx, ended also by Stop. The caller
// must call done once the request is answered.
func (p *Proxy) requestContext(ctx context.Context) (_ context.Context, done func()) {
	p.stop.init()
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(p.stop.ctx, func() { cancel(context.Cause(p.stop.ctx)) })
	return ctx, func() {
		unhook()
		cancel(nil)
	}
}

// stoppedError is err, unless ctx was ended by Stop: then the error that says so, for
// the client to retry.
func stoppedError(ctx context.Context, err error) error {
	if err == nil || !errors.Is(context.Cause(ctx), ErrStopping) {
		return err
	}
	return &APIError{Status: 529, Type: Overloaded, cause: ErrStopping,
		Message: "toolshed proxy is stopping and could not wait any longer for the upstream model's answer (its drain timeout, --drain-timeout, passed); retry the request"}
}
