package sqlstore_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/oauth/sqlstore"
)

// The environment of a replica process (see TestMain): it is started by
// TestRefreshAcrossReplicas with these set, and runs the calls of one replica.
const (
	replicaEnv    = "TOOLSHED_SQLSTORE_TEST_REPLICA" // the database's DSN
	replicaURLEnv = "TOOLSHED_SQLSTORE_TEST_URL"     // the protected server
	replicaTokEnv = "TOOLSHED_SQLSTORE_TEST_TOKEN"   // the token endpoint
)

// TestRefreshAcrossReplicas: two toolshed processes sharing one database, each with
// two connections making two calls, all starting at once with an expired token (and
// then with one the server refuses): the provider gets one refresh_token grant, every
// call succeeds, and both processes end with the new token. oidc-provider rotates
// refresh tokens and revokes the grant when one is used twice, so a second refresh
// would fail the calls; the spent refresh tokens are tried again at the end.
func TestRefreshAcrossReplicas(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			dsn := db.DSN(t)
			t.Setenv(sqlstore.KeyEnv, newKey())
			t.Setenv(sqlstore.PreviousKeyEnv, "")
			store, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			p := testoidc.Start(t, testoidc.Options{})
			srv := oauth.Server{Name: "protected", URL: testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})}
			first, err := oauth.Login(ctx, srv, oauth.LoginOptions{Store: store, Browser: func(authURL string) error {
				redirect, err := p.Login(ctx, authURL)
				if err == nil {
					go http.Get(redirect) // as the browser does; Login waits for it
				}
				return err
			}})
			if err != nil {
				t.Fatalf("Login: %v", err)
			}
			var spent []oauth.Secret
			for _, bogus := range []bool{false, true} {
				var before oauth.Credential
				err := store.Update(ctx, srv.URL, func(c *oauth.Credential) (*oauth.Credential, error) {
					before = *c
					if bogus {
						c.AccessToken = "not-a-token"
					} else {
						c.Expiry = time.Now().Add(-time.Minute)
					}
					return c, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				spent = append(spent, before.RefreshToken)
				refreshes, tokens := runReplicas(t, ctx, dsn, srv.URL, p.Endpoint("token"), 2)
				if refreshes != 1 {
					t.Errorf("bogus %v: %d refresh_token grants from 2 replicas with 4 connections and 8 calls, want 1", bogus, refreshes)
				}
				after, err := store.Get(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
					t.Fatalf("bogus %v: the stored token was not refreshed", bogus)
				}
				for i, tok := range tokens {
					if tok != fingerprint(after.AccessToken) {
						t.Errorf("bogus %v: replica %d ended with another token than the stored one", bogus, i)
					}
				}
			}
			for _, rt := range append(spent, first.RefreshToken) {
				form := strings.NewReader("grant_type=refresh_token&client_id=" + first.ClientID + "&refresh_token=" + string(rt))
				resp, err := http.Post(p.Endpoint("token"), "application/x-www-form-urlencoded", form)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Error("the provider took a spent refresh token")
				}
			}
		})
	}
}

// runReplicas starts n replica processes on dsn, lets them go at once when all are
// ready, and returns the token endpoint requests they made in all, and the access
// token each ended with.
func runReplicas(t *testing.T, ctx context.Context, dsn, url, tokenURL string, n int) (refreshes int, tokens []string) {
	t.Helper()
	type replica struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
		log   strings.Builder
	}
	var rs []*replica
	for range n {
		cmd := exec.CommandContext(ctx, os.Args[0]) // a replica: see TestMain
		cmd.Env = append(os.Environ(), replicaEnv+"="+dsn, replicaURLEnv+"="+url, replicaTokEnv+"="+tokenURL)
		r := &replica{cmd: cmd}
		cmd.Stderr = &r.log
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		r.stdin, r.out = stdin, bufio.NewScanner(stdout)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		rs = append(rs, r)
	}
	// line reads r's next line of the protocol ("ready", then "done N TOKEN");
	// the test framework's own lines are passed over.
	line := func(r *replica) string {
		for r.out.Scan() {
			if l := r.out.Text(); strings.HasPrefix(l, "replica: ") {
				return strings.TrimPrefix(l, "replica: ")
			} else {
				r.log.WriteString(l + "\n")
			}
		}
		return ""
	}
	for i, r := range rs {
		if l := line(r); l != "ready" {
			t.Fatalf("replica %d did not get ready (%q):\n%s", i, l, r.log.String())
		}
	}
	for _, r := range rs {
		io.WriteString(r.stdin, "go\n")
	}
	for i, r := range rs {
		var k int
		var tok string
		l := line(r)
		if _, err := fmt.Sscanf(l, "done %d %s", &k, &tok); err != nil {
			t.Fatalf("replica %d: %q:\n%s", i, l, r.log.String())
		}
		refreshes += k
		tokens = append(tokens, tok)
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("replica %d: %v:\n%s", i, err, r.log.String())
		}
	}
	return refreshes, tokens
}

// TestMain runs a replica of TestRefreshAcrossReplicas when that starts this test
// binary as one (replicaEnv set), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		if err := replica(); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// replica is one replica of TestRefreshAcrossReplicas:
// two connections to the protected server through the store in the database, two
// calls on each, at once. It says "replica: ready" once its store is open, waits for
// "go" on stdin, and ends with "replica: done N TOKEN": N requests to the token
// endpoint, and the fingerprint of the stored access token, which its connections
// last sent.
func replica() error {
	dsn := os.Getenv(replicaEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	srv := oauth.Server{Name: "protected", URL: os.Getenv(replicaURLEnv)}
	counter := &tokenRequests{url: os.Getenv(replicaTokEnv)}
	fmt.Println("replica: ready")
	if s := bufio.NewScanner(os.Stdin); !s.Scan() || s.Text() != "go" {
		return errors.New("no go on stdin")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	sent := make([]*lastAuth, 2)
	for i := range sent {
		sent[i] = &lastAuth{base: counter, url: srv.URL}
		wg.Go(func() {
			tr, err := oauth.NewTransport(ctx, srv, store, sent[i])
			if err != nil {
				errs <- err
				return
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "replica", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: tr}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
			if err != nil {
				errs <- fmt.Errorf("connecting: %w", err)
				return
			}
			defer cs.Close()
			var calls sync.WaitGroup
			for range 2 {
				calls.Go(func() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
					if err == nil && res.IsError {
						err = errors.New("the call returned a tool error")
					}
					if err != nil {
						errs <- err
					}
				})
			}
			calls.Wait()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("a call: %w", err)
	}
	c, err := store.Get(ctx, srv.URL)
	if err != nil {
		return err
	}
	for i, s := range sent {
		// The last request of each connection carried the stored token: the one
		// it refreshed itself or took from the store after the other's refresh.
		if s.last() != "Bearer "+string(c.AccessToken) {
			return fmt.Errorf("connection %d last sent another token than the stored one", i)
		}
	}
	fmt.Printf("replica: done %d %s\n", counter.n.Load(), fingerprint(c.AccessToken))
	return nil
}

// fingerprint stands for a token in the output: a hash of it.
func fingerprint(tok oauth.Secret) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:8])
}

// tokenRequests sends requests with http.DefaultTransport and counts those to the
// token endpoint url.
type tokenRequests struct {
	url string
	n   atomic.Int32
}

func (c *tokenRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.String() == c.url {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// lastAuth sends requests with base, and records the Authorization header of the
// last it sends to url.
type lastAuth struct {
	base http.RoundTripper
	url  string
	mu   sync.Mutex
	auth string
}

func (l *lastAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.String() == l.url {
		l.mu.Lock()
		l.auth = req.Header.Get("Authorization")
		l.mu.Unlock()
	}
	return l.base.RoundTrip(req)
}

func (l *lastAuth) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.auth
}

// newKey returns a fresh key as TOOLSHED_TOKEN_KEY holds it.
func newKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
