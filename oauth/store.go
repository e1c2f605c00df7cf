package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNotSignedIn is wrapped by the errors of lookups that find no credential, and of
// calls to a server whose credential is missing or can no longer be refreshed: the
// user has to sign in (again) with `toolshed auth login`.
var ErrNotSignedIn = errors.New("not signed in")

// Secret is a token or a client secret. It prints as "REDACTED" (with %v, %s, %+v
// and %#v, also as a field of a struct), so that a credential that ends up in a log
// line or an error by mistake shows no secret; it is stored as itself.
type Secret string

func (Secret) String() string   { return "REDACTED" }
func (Secret) GoString() string { return "REDACTED" }

// Credential is what one sign-in to one server yields. It is bound to the resource
// it was issued for and to the authorization server that issued it: its tokens go
// to that resource and its refresh token to that issuer's token endpoint, nowhere
// else.
type Credential struct {
	// Server is the server's name in the config, shown by `toolshed auth status`.
	Server string `json:"server"`
	// URL is the server's MCP endpoint as configured: the key of the credential.
	URL string `json:"url"`
	// Resource is the resource the tokens were issued for (RFC 8707), as the
	// server's protected resource metadata names it.
	Resource string `json:"resource"`
	// Issuer is the authorization server that issued the tokens, and TokenURL and
	// RevocationURL are its endpoints, from its metadata.
	Issuer        string `json:"issuer"`
	TokenURL      string `json:"token_url"`
	RevocationURL string `json:"revocation_url,omitempty"`
	// ClientID and ClientSecret are the client toolshed was registered as with
	// that issuer (pre-registered, dynamically registered or a metadata document
	// URL); AuthStyle is how the token endpoint takes them (oauth2.AuthStyle).
	ClientID     string `json:"client_id"`
	ClientSecret Secret `json:"client_secret,omitempty"`
	AuthStyle    int    `json:"auth_style,omitempty"`
	// Scopes are the scopes granted. WantScopes are scopes a call was refused
	// for (insufficient_scope): the next Login asks for them too (step-up).
	Scopes     []string `json:"scopes,omitempty"`
	WantScopes []string `json:"want_scopes,omitempty"`

	AccessToken  Secret    `json:"access_token"`
	RefreshToken Secret    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Updated is when the tokens were last stored.
	Updated time.Time `json:"updated,omitzero"`
	// User is who the credential is for when a gateway keeps one per user of a
	// server (see Server.User); "" is the gateway's own, `toolshed auth login`'s.
	User string `json:"user,omitempty"`
}

// expired reports whether the access token has expired, or will within margin.
func (c *Credential) expired(now time.Time, margin time.Duration) bool {
	return c.AccessToken == "" || !c.Expiry.IsZero() && !now.Add(margin).Before(c.Expiry)
}

// CanonicalURL is the form of a server URL credentials are keyed by: scheme and host
// in lower case, no fragment, no trailing slash after the path.
func CanonicalURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("server URL %q is not an http(s) URL with a host", raw)
	}
	u.Scheme, u.Host, u.Fragment = strings.ToLower(u.Scheme), strings.ToLower(u.Host), ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// userMark separates a per-user key's user from the server's URL. A canonical URL
// has no fragment, so no server's own key can hold it.
const userMark = "#user="

// Key is the key of the credential of user for the server at serverURL: its
// canonical URL, with the user after it for a per-user credential.
func Key(serverURL, user string) (string, error) {
	k, err := CanonicalURL(serverURL)
	if err != nil || user == "" {
		return k, err
	}
	if strings.ContainsAny(user, "#/?") {
		return "", fmt.Errorf("oauth: user %q has a character keys cannot hold (#, / or ?)", user)
	}
	return k + userMark + user, nil
}

// CanonicalKey is the canonical form of a key as Key makes it, or of a server URL:
// what stores key credentials by.
func CanonicalKey(key string) (string, error) {
	u, user, _ := strings.Cut(key, userMark)
	return Key(u, user)
}

// A Store keeps credentials, keyed by the server's canonical URL (see Key). It is safe for
// concurrent use, and Update is atomic also against other processes (or replicas)
// that share the store: that is what keeps two refreshes of one credential from
// using its refresh token twice.
type Store interface {
	// Get returns the credential of a server URL, or an error wrapping
	// ErrNotSignedIn when there is none.
	Get(ctx context.Context, serverURL string) (*Credential, error)
	// Update reads the credential of serverURL (nil when there is none), calls fn
	// with it, and stores what fn returns: a credential replaces it, nil deletes
	// it. No other Update of the same key runs meanwhile. An error from fn leaves
	// the store as it was and is returned.
	Update(ctx context.Context, serverURL string, fn func(*Credential) (*Credential, error)) error
	// List returns every credential, in no particular order.
	List(ctx context.Context) ([]*Credential, error)
}

// DefaultPath returns where a local toolshed keeps its credentials:
// $XDG_DATA_HOME/toolshed/credentials.json, with XDG_DATA_HOME defaulting to
// ~/.local/share (the directory of the search log).
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("oauth: no data directory for credentials (%v); set XDG_DATA_HOME", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "toolshed", "credentials.json"), nil
}

// FileStore is a Store in one JSON file, readable by its owner only (mode 0600, in
// a directory of mode 0700), replaced atomically on every change. Updates hold an
// advisory lock on the file PATH.lock (on Unix), so processes that share the file
// take turns.
type FileStore struct {
	// Path is the file; empty means DefaultPath.
	Path string

	mu sync.Mutex
}

// fileVersion is the version of the file's layout, written into it so that a later
// layout can read an older one.
const fileVersion = 1

type fileContent struct {
	Version       int             `json:"version"`
	Credentials   []*Credential   `json:"credentials"`
	Registrations []*Registration `json:"registrations,omitempty"`
}

func (s *FileStore) path() (string, error) {
	if s.Path != "" {
		return s.Path, nil
	}
	return DefaultPath()
}

// read reads the file; a missing file is an empty store.
func (s *FileStore) read() (*fileContent, error) {
	p, err := s.path()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return &fileContent{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: reading credentials: %w", err)
	}
	var f fileContent
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("oauth: credentials file %s is not valid JSON (%v); remove it and sign in again", p, err)
	}
	if f.Version > fileVersion {
		return nil, fmt.Errorf("oauth: credentials file %s has version %d, newer than this toolshed reads (%d); upgrade toolshed", p, f.Version, fileVersion)
	}
	return &f, nil
}

// write replaces the file with f: a temporary file in the same directory, synced,
// then renamed over it.
func (s *FileStore) write(f *fileContent) error {
	p, err := s.path()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("oauth: creating the credentials directory: %w", err)
	}
	f.Version = fileVersion
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".credentials-*.tmp")
	if err != nil {
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("oauth: writing credentials: %w", err)
	}
	return nil
}

// Get implements Store.
func (s *FileStore) Get(ctx context.Context, serverURL string) (*Credential, error) {
	key, err := CanonicalKey(serverURL)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	for _, c := range f.Credentials {
		if c.URL == key {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w to %s", ErrNotSignedIn, key)
}

// List implements Store.
func (s *FileStore) List(ctx context.Context) ([]*Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Credentials, nil
}

// Update implements Store.
func (s *FileStore) Update(ctx context.Context, serverURL string, fn func(*Credential) (*Credential, error)) error {
	key, err := CanonicalKey(serverURL)
	if err != nil {
		return err
	}
	return s.modify(ctx, func(f *fileContent) (bool, error) {
		creds := f.Credentials
		i := slices.IndexFunc(creds, func(c *Credential) bool { return c.URL == key })
		var old *Credential
		if i >= 0 {
			cp := *creds[i]
			old = &cp
		}
		c, err := fn(old)
		if err != nil {
			return false, err
		}
		switch {
		case c == nil && i < 0:
			return false, nil
		case c == nil:
			creds = slices.Delete(creds, i, i+1)
		default:
			c.URL = key
			if i >= 0 {
				creds[i] = c
			} else {
				creds = append(creds, c)
			}
		}
		f.Credentials = creds
		return true, nil
	})
}

// modify reads the file, lets change alter it, and writes it back when change says it
// changed it: all under the process's mutex and the file's advisory lock, so that
// processes sharing the file take turns. An error from change leaves the file as it was.
func (s *FileStore) modify(ctx context.Context, change func(*fileContent) (bool, error)) error {
	p, err := s.path()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("oauth: creating the credentials directory: %w", err)
	}
	unlock, err := lockFile(ctx, p+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	changed, err := change(f)
	if err != nil || !changed {
		return err
	}
	return s.write(f)
}
