package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// How serve and proxy stop. The first SIGINT or SIGTERM starts a clean stop. serve
// --http drains first (see gateway.Gateway.Drain; over stdio its one client is the
// process that signals it, leaving, so its calls are cancelled at once): /readyz answers 503 and new sessions are
// refused, while the sessions it has are served and the calls in flight may finish, for
// up to --drain-timeout; then it cancels what is left (each client is told why, each
// upstream sent notifications/cancelled), stops the upstream servers (within
// gateway.DefaultStopTimeout, or the drain timeout if shorter) and exits 0. proxy stops
// accepting and lets requests finish for up to --drain-timeout, then answers those still
// running 529 overloaded_error (see serveDrain). A second signal, or a
// clean stop that outlives its bound, ends everything at once, the upstream servers'
// process groups first, so that no server is left running without toolshed.

// drainMargin is how long past the drain timeout the clean stop may still run: the
// clean stop bounds itself by the drain timeout, so the margin only covers its last
// steps (the proxy's answers to the requests cut, within answerGrace), and the forced
// exit is for a stop that hangs.
const drainMargin = answerGrace + 500*time.Millisecond

// Exit statuses of a stop that could not finish cleanly. A clean stop exits 0 (serve's
// calls cancelled at the drain timeout included: their clients got a result saying
// why), or 1 when HTTP requests still running at the end had their connections closed.
const (
	// exitDrainTimeout: the clean stop outlived --drain-timeout; what it had not
	// stopped was killed.
	exitDrainTimeout = 1
	// exitSignal is added to the number of a second signal, as a shell reports a
	// process a signal ended (130 for SIGINT, 143 for SIGTERM).
	exitSignal = 128
)

// onSignals returns a context that ends at the first SIGINT or SIGTERM. From then on, a
// second signal, or the command still running drain plus stopping (plus drainMargin)
// later, runs kill (when set: it must end at once whatever the command started) and
// exits. stop ends the signal handling; call it once the command has stopped what it
// started.
func onSignals(stderr io.Writer, drain, stopping time.Duration, kill func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	force := func(code int, format string, args ...any) {
		fmt.Fprintf(stderr, "toolshed: "+format+"\n", args...)
		if kill != nil {
			kill()
		}
		os.Exit(code)
	}
	go func() {
		select {
		case <-done:
			return
		case sig := <-sigs:
			if stopping > 0 {
				fmt.Fprintf(stderr, "toolshed: %v: draining: not ready, no new sessions; calls in flight may finish within %v (--drain-timeout), then toolshed stops within %v more; signal again to stop at once\n", sig, drain, stopping)
			} else {
				fmt.Fprintf(stderr, "toolshed: %v: stopping within %v (--drain-timeout); signal again to stop at once\n", sig, drain)
			}
			cancel()
		}
		deadline := time.NewTimer(drain + stopping + drainMargin)
		defer deadline.Stop()
		select {
		case <-done:
		case sig := <-sigs:
			force(exitSignal+signalNumber(sig), "%v again: stopping at once", sig)
		case <-deadline.C:
			force(exitDrainTimeout, "still stopping %v after the signal (--drain-timeout %v): ending what is left at once", drain+stopping, drain)
		}
	}()
	return ctx, sync.OnceFunc(func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	})
}

// signalNumber is sig's number, for the exit status.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}
