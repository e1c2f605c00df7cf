package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/oauth"
)

// newKey returns a fresh key as TOOLSHED_TOKEN_KEY holds it.
func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func keys(t *testing.T, current, previous string) *Keys {
	t.Helper()
	k, err := ParseKeys(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func open(t *testing.T, dsn string, k *Keys) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{Keys: k})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cred is a credential with secrets unlike anything else in the row.
func cred(server, url, tag string) *oauth.Credential {
	return &oauth.Credential{
		Server: server, Resource: url, Issuer: "https://issuer.example", TokenURL: "https://issuer.example/token",
		ClientID: "client-" + server, ClientSecret: oauth.Secret("client-secret-" + tag),
		AccessToken: oauth.Secret("access-token-" + tag), RefreshToken: oauth.Secret("refresh-token-" + tag),
		Expiry: time.Now().Add(time.Hour).Round(0), Scopes: []string{"mcp:read"},
	}
}

func put(t *testing.T, s *Store, url string, c *oauth.Credential) {
	t.Helper()
	if err := s.Update(context.Background(), url, func(*oauth.Credential) (*oauth.Credential, error) { return c, nil }); err != nil {
		t.Fatalf("Update(%s): %v", url, err)
	}
}

// TestStoreContract runs the oauth.Store contract on both databases: keyed by the
// canonical URL, get/update/delete/list, an error from fn leaving the store as it
// was, and what one Store writes seen by another on the same database.
func TestStoreContract(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := db.DSN(t)
			k := keys(t, newKey(t), "")
			s := open(t, dsn, k)
			a, b := "https://a.example/mcp", "https://b.example/mcp"
			boom := errors.New("boom")
			credB := cred("b", b, "b1")
			steps := []struct {
				name string
				url  string
				fn   func(*oauth.Credential) (*oauth.Credential, error)
				err  error
				// want is the access token of each URL afterwards ("" for none).
				want map[string]string
			}{
				{"nothing to delete", a, func(c *oauth.Credential) (*oauth.Credential, error) {
					if c != nil {
						return nil, fmt.Errorf("fn got %v for a missing credential", c)
					}
					return nil, nil
				}, nil, map[string]string{a: "", b: ""}},
				{"insert, keyed canonically", "HTTPS://A.example/mcp/", func(*oauth.Credential) (*oauth.Credential, error) {
					return cred("a", a, "a1"), nil
				}, nil, map[string]string{a: "access-token-a1", b: ""}},
				{"insert another", b, func(*oauth.Credential) (*oauth.Credential, error) {
					cp := *credB
					return &cp, nil
				}, nil, map[string]string{a: "access-token-a1", b: "access-token-b1"}},
				{"replace with what fn makes of it", a, func(c *oauth.Credential) (*oauth.Credential, error) {
					if c == nil || c.RefreshToken != "refresh-token-a1" || c.URL != a {
						return nil, fmt.Errorf("fn got %+v", c)
					}
					c.AccessToken = "access-token-a2"
					return c, nil
				}, nil, map[string]string{a: "access-token-a2", b: "access-token-b1"}},
				{"an error from fn changes nothing", a, func(c *oauth.Credential) (*oauth.Credential, error) {
					c.AccessToken = "lost"
					return nil, boom
				}, boom, map[string]string{a: "access-token-a2", b: "access-token-b1"}},
				{"an error from fn deletes nothing", b, func(*oauth.Credential) (*oauth.Credential, error) { return nil, boom },
					boom, map[string]string{a: "access-token-a2", b: "access-token-b1"}},
				{"nil deletes", a, func(*oauth.Credential) (*oauth.Credential, error) { return nil, nil },
					nil, map[string]string{a: "", b: "access-token-b1"}},
			}
			other := open(t, dsn, k) // another replica's pool on the same database
			for _, st := range steps {
				if err := s.Update(ctx, st.url, st.fn); !errors.Is(err, st.err) || (err == nil) != (st.err == nil) {
					t.Fatalf("%s: Update = %v, want %v", st.name, err, st.err)
				}
				var listed []string
				all, err := other.List(ctx)
				if err != nil {
					t.Fatalf("%s: List: %v", st.name, err)
				}
				for _, c := range all {
					listed = append(listed, c.URL+"="+string(c.AccessToken))
				}
				var want []string
				for _, u := range []string{a, b} {
					c, err := other.Get(ctx, u)
					switch {
					case st.want[u] == "" && !errors.Is(err, oauth.ErrNotSignedIn):
						t.Errorf("%s: Get(%s) = %v, %v; want ErrNotSignedIn", st.name, u, c, err)
					case st.want[u] != "" && (err != nil || string(c.AccessToken) != st.want[u] || c.URL != u):
						t.Errorf("%s: Get(%s) = %+v, %v; want access token %s", st.name, u, c, err, st.want[u])
					}
					if st.want[u] != "" {
						want = append(want, u+"="+st.want[u])
					}
				}
				if strings.Join(listed, " ") != strings.Join(want, " ") {
					t.Errorf("%s: List = %v, want %v", st.name, listed, want)
				}
			}
			// All of a credential is kept.
			got, err := other.Get(ctx, b)
			if want := credB; err != nil || got.ClientSecret != want.ClientSecret || !got.Expiry.Equal(want.Expiry) ||
				got.Issuer != want.Issuer || got.TokenURL != want.TokenURL || strings.Join(got.Scopes, " ") != "mcp:read" {
				t.Errorf("Get(b) = %+v, %v; want all of %+v", got, err, want)
			}
			if _, err := s.Get(ctx, "not a url"); err == nil {
				t.Error("Get of a bad URL succeeded")
			}
		})
	}
}

// TestUpdateAtomic: many updates at once, from two pools on one database as two
// replicas, each adding one to a count in the credential: none is lost.
func TestUpdateAtomic(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := db.DSN(t)
			k := keys(t, newKey(t), "")
			stores := []*Store{open(t, dsn, k), open(t, dsn, k)}
			const url, each = "https://a.example/mcp", 8
			var wg sync.WaitGroup
			errs := make(chan error, 2*each)
			for _, s := range stores {
				for range each {
					wg.Go(func() {
						errs <- s.Update(ctx, url, func(c *oauth.Credential) (*oauth.Credential, error) {
							if c == nil {
								c = cred("a", url, "x")
								c.AccessToken = "0"
							}
							n, err := strconv.Atoi(string(c.AccessToken))
							if err != nil {
								return nil, err
							}
							c.AccessToken = oauth.Secret(strconv.Itoa(n + 1))
							return c, nil
						})
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			c, err := stores[0].Get(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.AccessToken); got != strconv.Itoa(2*each) { // a count, not a secret
				t.Fatalf("count = %s, want %d: an update was lost", got, 2*each)
			}
		})
	}
}

// TestRegistrations: the client registered with an issuer is kept sealed beside the
// credentials, seen by another Store on the same database, never listed as a
// credential, forgotten on request, and resealed by Rekey; a row sealed with a key
// not at hand counts as no registration.
func TestRegistrations(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := db.DSN(t)
			oldKey, newKeyText := newKey(t), newKey(t)
			s := open(t, dsn, keys(t, oldKey, ""))
			issuer := "https://login.example"
			if r, err := s.Registration(ctx, issuer); err != nil || r != nil {
				t.Fatalf("before any: %v, %v", r, err)
			}
			reg := &oauth.Registration{Issuer: issuer, ClientID: "client-1", ClientSecret: "client-secret-value", RedirectURIs: []string{"http://127.0.0.1/callback"}, ApplicationType: "native"}
			if err := s.SetRegistration(ctx, issuer, reg); err != nil {
				t.Fatal(err)
			}
			if err := s.SetRegistration(ctx, "https://other.example", reg); err == nil {
				t.Error("a registration stored under another issuer")
			}
			put(t, s, "https://a.example/mcp", cred("a", "https://a.example/mcp", "a1"))
			other := open(t, dsn, keys(t, oldKey, ""))
			if r, err := other.Registration(ctx, issuer); err != nil || r == nil || r.ClientID != "client-1" || r.ClientSecret != "client-secret-value" {
				t.Fatalf("seen by another store: %+v, %v", r, err)
			}
			if list, err := s.List(ctx); err != nil || len(list) != 1 {
				t.Errorf("List: %d credentials, %v", len(list), err)
			}
			var raw []byte
			if err := s.db.QueryRowContext(ctx, s.q(`SELECT ciphertext FROM `+table+` WHERE key = ?`), registrationKey+issuer).Scan(&raw); err != nil || strings.Contains(string(raw), "client-secret-value") {
				t.Errorf("the registration's row holds its secret in the clear (%v)", err)
			}
			// Rotated: readable with the previous key, resealed by Rekey, then
			// readable with the new key alone.
			rotated := open(t, dsn, keys(t, newKeyText, oldKey))
			if n, err := rotated.Rekey(ctx); err != nil || n != 2 {
				t.Fatalf("Rekey: %d, %v", n, err)
			}
			fresh := open(t, dsn, keys(t, newKeyText, ""))
			if r, err := fresh.Registration(ctx, issuer); err != nil || r == nil || r.ClientID != "client-1" {
				t.Errorf("after Rekey, with the new key alone: %+v, %v", r, err)
			}
			if r, err := s.Registration(ctx, issuer); err != nil || r != nil {
				t.Errorf("with the old key alone after Rekey: %+v, %v", r, err)
			}
			if err := fresh.SetRegistration(ctx, issuer, nil); err != nil {
				t.Fatal(err)
			}
			if r, err := other.Registration(ctx, issuer); err != nil || r != nil {
				t.Errorf("after forgetting: %+v, %v", r, err)
			}
		})
	}
}

// TestConnectLater: with ConnectLater, a PostgreSQL database that cannot be reached at
// Open gives a Store (and ErrUnreached) whose uses fail saying so, and which works
// once the database answers, without being opened again; without it, Open fails.
func TestConnectLater(t *testing.T) {
	dsn := pgtest.Stores(t)[1].DSN(t)
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("a postgres URL was expected: %q", dsn)
	}
	target := u.Host
	var open atomic.Bool
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !open.Load() {
				c.Close() // the database is down
				continue
			}
			go func() {
				defer c.Close()
				d, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer d.Close()
				go io.Copy(d, c)
				io.Copy(c, d)
			}()
		}
	}()
	u.Host = ln.Addr().String()
	via := u.String()
	ctx := context.Background()
	k := keys(t, newKey(t), "")
	if s, err := Open(ctx, via, Options{Keys: k}); err == nil || s != nil {
		t.Fatalf("Open of an unreachable database without ConnectLater: %v, %v", s, err)
	}
	s, err := Open(ctx, via, Options{Keys: k, ConnectLater: true})
	if s == nil || !errors.Is(err, ErrUnreached) {
		t.Fatalf("Open with ConnectLater: %v, %v", s, err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, "https://a.example/mcp"); !errors.Is(err, ErrUnreached) || errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("Get while unreached: %v", err)
	}
	open.Store(true)
	put(t, s, "https://a.example/mcp", cred("a", "https://a.example/mcp", "a1"))
	if c, err := s.Get(ctx, "https://a.example/mcp"); err != nil || c.AccessToken != "access-token-a1" {
		t.Errorf("once reached: %+v, %v", c, err)
	}
}
