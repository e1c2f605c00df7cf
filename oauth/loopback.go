package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ErrNotLoopback is wrapped by the error for a redirect URI that is not on a
// loopback address: toolshed registers and accepts only those, so that no
// authorization code is ever sent to another host.
var ErrNotLoopback = errors.New("the redirect URI is not on a loopback address")

// callback is the loopback listener that takes one authorization response.
type callback struct {
	redirectURL string
	path        string
	srv         *http.Server

	mu       sync.Mutex
	state    string // what the response must carry; "" until fetch starts
	used     bool   // the state has been used: no second response is taken
	delivery chan callbackResult
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// CheckRedirectURL returns an error wrapping ErrNotLoopback unless raw is an http
// URL on a loopback host: 127.0.0.1 (or another 127/8 address), [::1] or localhost.
func CheckRedirectURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("redirect URI %q: %w", raw, err)
	}
	if u.Scheme != "http" || !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("redirect URI %q: %w; use http://127.0.0.1:PORT/callback", raw, ErrNotLoopback)
	}
	return u, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// listenLoopback listens for the redirect on redirect (checked to be loopback), or
// on 127.0.0.1:port (port 0: a free one).
func listenLoopback(redirect string, port int) (*callback, error) {
	host, path := "127.0.0.1", "/callback"
	if redirect != "" {
		u, err := CheckRedirectURL(redirect)
		if err != nil {
			return nil, err
		}
		host, path = u.Hostname(), u.Path
		if path == "" {
			path = "/"
		}
		if p := u.Port(); p != "" {
			port, _ = strconv.Atoi(p)
		}
	}
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("callback port %d is not a TCP port", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in redirect: %w; choose another callbackPort", err)
	}
	cb := &callback{path: path, delivery: make(chan callbackResult, 1)}
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: path}
	if host == "localhost" {
		u.Host = net.JoinHostPort("localhost", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	cb.redirectURL = u.String()
	cb.srv = &http.Server{Handler: cb}
	go cb.srv.Serve(ln)
	return cb, nil
}

func (cb *callback) close() { cb.srv.Close() }

// ServeHTTP takes the authorization response: once, with the state of the request
// sent, on a loopback Host (a page elsewhere that makes the browser request it by
// another name gets nothing).
func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if r.URL.Path != cb.path || r.Method != http.MethodGet || !loopbackHost(host) {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	cb.mu.Lock()
	switch {
	case cb.state == "" || q.Get("state") != cb.state:
		cb.mu.Unlock()
		http.Error(w, "This sign-in response does not belong to the sign-in toolshed is waiting for (its state does not match); it is ignored.", http.StatusBadRequest)
		return
	case cb.used:
		cb.mu.Unlock()
		http.Error(w, "This sign-in response has been used already; it is ignored.", http.StatusBadRequest)
		return
	}
	cb.used = true
	cb.mu.Unlock()
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		cb.delivery <- callbackResult{err: fmt.Errorf("the authorization server refused: %s", msg)}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>toolshed</title><p>Sign-in failed: %s. You can close this tab.</p>\n", html.EscapeString(msg))
		return
	}
	if q.Get("code") == "" {
		cb.delivery <- callbackResult{err: errors.New("the authorization response carries no code")}
		http.Error(w, "The sign-in response carries no code.", http.StatusBadRequest)
		return
	}
	cb.delivery <- callbackResult{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!doctype html><title>toolshed</title><p>Signed in. You can close this tab and go back to toolshed.</p>\n")
}

// fetch is the SDK's AuthorizationCodeFetcher: it checks that authURL sends the
// browser back here, shows it to the user, and waits for the response.
func (cb *callback) fetch(ctx context.Context, authURL string, show func(string) error) (*auth.AuthorizationResult, error) {
	state, err := checkAuthURL(authURL, cb.redirectURL)
	if err != nil {
		return nil, err
	}
	cb.mu.Lock()
	cb.state, cb.used = state, false
	cb.mu.Unlock()
	if err := show(authURL); err != nil {
		return nil, err
	}
	select {
	case r := <-cb.delivery:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the browser to come back: %w", context.Cause(ctx))
	}
}

// checkAuthURL checks that authURL sends the browser back to redirect, with a
// state and a PKCE S256 challenge, and returns the state.
func checkAuthURL(authURL, redirect string) (string, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return "", fmt.Errorf("the authorization URL: %w", err)
	}
	q := u.Query()
	if q.Get("redirect_uri") != redirect {
		return "", fmt.Errorf("the authorization URL redirects to %q, not to toolshed's %s", q.Get("redirect_uri"), redirect)
	}
	if q.Get("state") == "" || q.Get("code_challenge_method") != "S256" {
		return "", errors.New("the authorization URL lacks a state or a PKCE S256 challenge")
	}
	return q.Get("state"), nil
}

// openBrowser opens u in the system's browser, if there is one.
func openBrowser(u string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name = "rundll32"
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display")
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s not found", name)
	}
	args := []string{u}
	if runtime.GOOS == "windows" {
		args = []string{"url.dll,FileProtocolHandler", u}
	}
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
