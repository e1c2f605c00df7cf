package oauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "credentials.json")
	s := &FileStore{Path: path}
	if _, err := s.Get(ctx, "https://a.example/mcp"); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("Get from no file: %v", err)
	}
	put := func(url, tok string) {
		err := s.Update(ctx, url, func(*Credential) (*Credential, error) {
			return &Credential{Server: "a", Resource: url, AccessToken: Secret(tok), Expiry: time.Now().Add(time.Hour)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("HTTPS://A.example/mcp/", "t1") // keyed canonically
	put("https://b.example/mcp", "t2")
	c, err := s.Get(ctx, "https://a.example/mcp")
	if err != nil || c.AccessToken != "t1" || c.URL != "https://a.example/mcp" {
		t.Fatalf("Get = %+v, %v", c, err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	// An error from fn leaves the store as it was; nil deletes.
	boom := errors.New("boom")
	if err := s.Update(ctx, "https://a.example/mcp", func(*Credential) (*Credential, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "https://a.example/mcp"); err != nil {
		t.Fatalf("after a failed update: %v", err)
	}
	if err := s.Update(ctx, "https://a.example/mcp", func(*Credential) (*Credential, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.List(ctx); len(all) != 1 || all[0].AccessToken != "t2" {
		t.Fatalf("after deleting a: %v", all)
	}
	// No temporary file is left beside it.
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestFileStoreBadFile(t *testing.T) {
	for _, tt := range []struct{ content, want string }{
		{"{not json", "not valid JSON"},
		{`{"version": 99, "credentials": []}`, "upgrade toolshed"},
	} {
		path := filepath.Join(t.TempDir(), "credentials.json")
		os.WriteFile(path, []byte(tt.content), 0o600)
		_, err := (&FileStore{Path: path}).Get(context.Background(), "https://a.example/mcp")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.content, err, tt.want)
		}
	}
}

func TestStateOf(t *testing.T) {
	now := time.Now()
	tests := []struct {
		c    *Credential
		want State
	}{
		{nil, NeedsSignIn},
		{&Credential{}, NeedsSignIn},
		{&Credential{AccessToken: "a", Expiry: now.Add(time.Hour)}, SignedIn},
		{&Credential{AccessToken: "a"}, SignedIn}, // no expiry given
		{&Credential{AccessToken: "a", RefreshToken: "r", Expiry: now.Add(-time.Hour)}, Refreshable},
		{&Credential{AccessToken: "a", Expiry: now.Add(-time.Hour)}, NeedsSignIn},
		{&Credential{RefreshToken: "r"}, Refreshable},
	}
	for i, tt := range tests {
		if got := StateOf(tt.c, now); got != tt.want {
			t.Errorf("%d: StateOf = %s, want %s", i, got, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		resource, url string
		want          bool
	}{
		{"http://h:1/mcp", "http://h:1/mcp", true},
		{"http://h:1/mcp", "http://h:1/mcp/x", true},
		{"http://h:1/mcp", "http://h:1/mcpx", false},
		{"http://h:1/mcp", "http://h:1/", false},
		{"http://h:1/mcp", "http://h:2/mcp", false},
		{"http://h:1/mcp", "https://h:1/mcp", false},
		{"http://h:1", "http://h:1/anything", true},
		{"", "http://h:1/mcp", false},
	}
	for _, tt := range tests {
		if got := covers(tt.resource, tt.url); got != tt.want {
			t.Errorf("covers(%q, %q) = %v", tt.resource, tt.url, got)
		}
	}
}

func FuzzCheckRedirectURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080/callback", "http://localhost/cb", "http://[::1]/", "https://evil.example/", "http://127.0.0.1@evil.example/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := CheckRedirectURL(s)
		if err != nil {
			return
		}
		if u.Scheme != "http" || !loopbackHost(u.Hostname()) {
			t.Fatalf("accepted %q (host %q)", s, u.Hostname())
		}
	})
}

// TestKey: a per-user key keeps its user through the canonical form the stores key
// by, never equals the server's own key, and refuses a user that would not survive it.
func TestKey(t *testing.T) {
	for _, c := range []struct{ url, user, want string }{
		{"https://MCP.example.com/mcp/", "", "https://mcp.example.com/mcp"},
		{"https://MCP.example.com/mcp/", "ab12", "https://mcp.example.com/mcp#user=ab12"},
		{"https://mcp.example.com/mcp#frag", "ab12", "https://mcp.example.com/mcp#user=ab12"},
	} {
		got, err := Key(c.url, c.user)
		if err != nil || got != c.want {
			t.Errorf("Key(%q, %q) = %q, %v; want %q", c.url, c.user, got, err, c.want)
		}
		again, err := CanonicalKey(got)
		if err != nil || again != got {
			t.Errorf("CanonicalKey(%q) = %q, %v", got, again, err)
		}
	}
	if _, err := Key("https://mcp.example.com/mcp", "a#b"); err == nil {
		t.Error("a user with # was taken")
	}
	ctx := context.Background()
	s := &FileStore{Path: filepath.Join(t.TempDir(), "c.json")}
	own, _ := Key("https://mcp.example.com/mcp", "")
	mine, _ := Key("https://mcp.example.com/mcp", "ab12")
	if err := s.Update(ctx, mine, func(*Credential) (*Credential, error) {
		return &Credential{AccessToken: "t", User: "ab12"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, own); !errors.Is(err, ErrNotSignedIn) {
		t.Errorf("the server's own key found a user's credential: %v", err)
	}
	if c, err := s.Get(ctx, "HTTPS://mcp.example.com/mcp/#user=ab12"); err != nil || c.User != "ab12" {
		t.Errorf("the user's credential: %+v, %v", c, err)
	}
}
