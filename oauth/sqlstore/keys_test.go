package sqlstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/oauth"
)

// TestKeysFromEnv: a missing or malformed key is refused with an error that names
// the variable and how to make a key, and never quotes what it was given.
func TestKeysFromEnv(t *testing.T) {
	good := newKey(t)
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	tests := []struct {
		name, key, previous string
		err                 error
		want                []string
	}{
		{"unset", "", "", ErrNoKey, []string{KeyEnv, "openssl rand -base64 32", "unencrypted"}},
		{"space", "  \n", "", ErrNoKey, []string{KeyEnv, "openssl rand -base64 32"}},
		{"only the previous", "", good, ErrNoKey, []string{KeyEnv, PreviousKeyEnv}},
		{"not base64", "correct horse battery staple!!", "", ErrBadKey, []string{KeyEnv, "not base64", "openssl rand -base64 32"}},
		{"16 bytes", short, "", ErrBadKey, []string{KeyEnv, "16 bytes", "32", "openssl rand -base64 32"}},
		{"previous malformed", good, short, ErrBadKey, []string{PreviousKeyEnv, "16 bytes"}},
		{"a key", good, "", nil, nil},
		{"a key with a newline, as from a file", good + "\n", "", nil, nil},
		{"URL alphabet, unpadded", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), "", nil, nil},
		{"both", good, newKey(t), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(KeyEnv, tt.key)
			t.Setenv(PreviousKeyEnv, tt.previous)
			k, err := KeysFromEnv()
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("KeysFromEnv = %v, want %v", err, tt.err)
			}
			if err == nil {
				if k.ID() == "" {
					t.Error("no key id")
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, v := range []string{tt.key, tt.previous} {
				if v = strings.TrimSpace(v); len(v) > 4 && strings.Contains(err.Error(), v) {
					t.Errorf("error %q quotes a key", err)
				}
			}
		})
	}
}

// TestOpenWithoutKey: without a key, a database store is refused before anything is
// created: credentials are never stored in plaintext.
func TestOpenWithoutKey(t *testing.T) {
	t.Setenv(KeyEnv, "")
	t.Setenv(PreviousKeyEnv, "")
	path := filepath.Join(t.TempDir(), "credentials.db")
	_, err := Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), KeyEnv) || !strings.Contains(err.Error(), "openssl rand -base64 32") {
		t.Fatalf("Open without a key: %v, want ErrNoKey naming %s and how to make a key", err, KeyEnv)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Open without a key created %s", path)
	}
	t.Setenv(KeyEnv, newKey(t))
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open with %s set: %v", KeyEnv, err)
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the SQLite file: %v, %v; want mode 0600", fi, err)
	}
}

// raw is a row as stored.
type raw struct {
	key, issuer, keyID string
	sealed             []byte
	version            int
}

func rows(t *testing.T, s *Store) []raw {
	t.Helper()
	r, err := s.db.Query(`SELECT key, issuer, key_id, ciphertext, version FROM ` + table + ` ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []raw
	for r.Next() {
		var x raw
		if err := r.Scan(&x.key, &x.issuer, &x.keyID, &x.sealed, &x.version); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

// TestEncryption: what is stored holds no secret; every write has a fresh nonce; a
// row copied to another server's, or changed, or read with another key, fails to
// open with an error that says what to do, and yields no token.
func TestEncryption(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := db.DSN(t)
			k := keys(t, newKey(t), "")
			s := open(t, dsn, k)
			a, b := "https://a.example/mcp", "https://b.example/mcp"
			ca, cb := cred("a", a, "AAAA"), cred("b", b, "BBBB")
			put(t, s, a, ca)
			put(t, s, b, cb)
			before := rows(t, s)
			put(t, s, a, ca) // the same credential again
			after := rows(t, s)
			if len(after) != 2 || bytes.Equal(before[0].sealed, after[0].sealed) {
				t.Error("writing the same credential twice stored the same bytes: the nonce is not fresh")
			}
			for _, r := range after {
				if r.keyID != k.ID() || r.version != rowFormat || r.issuer != "https://issuer.example" {
					t.Errorf("row %s: key id %q version %d issuer %q", r.key, r.keyID, r.version, r.issuer)
				}
				for _, c := range []*oauth.Credential{ca, cb} {
					for _, sec := range []oauth.Secret{c.AccessToken, c.RefreshToken, c.ClientSecret} {
						for _, sub := range []string{string(sec), strings.TrimPrefix(string(sec), "access-token-")} {
							if bytes.Contains(r.sealed, []byte(sub)) || strings.Contains(r.key+r.issuer+r.keyID, sub) {
								t.Errorf("row %s holds %q in the clear", r.key, sub)
							}
						}
					}
				}
				if bytes.Contains(r.sealed, []byte(`"server"`)) || bytes.Contains(r.sealed, []byte("client-a")) {
					t.Errorf("row %s holds the credential's JSON in the clear", r.key)
				}
			}

			// a's row copied over b's: b does not open, and a's token is not b's.
			// Such a row is no credential: Get says to sign in again, List leaves
			// it out, and Update gets none, so that a sign-in replaces it.
			if _, err := s.db.Exec(s.q(`UPDATE `+table+` SET ciphertext = ?, key_id = ? WHERE key = ?`), after[0].sealed, after[0].keyID, b); err != nil {
				t.Fatal(err)
			}
			c, err := s.Get(ctx, b)
			if !errors.Is(err, ErrCannotOpen) || !errors.Is(err, oauth.ErrNotSignedIn) || !strings.Contains(err.Error(), "copied from another server's row") || !strings.Contains(err.Error(), "sign in again") {
				t.Errorf("Get of a row copied from another server's: %v, %v; want ErrCannotOpen and ErrNotSignedIn", c, err)
			}
			if all, err := s.List(ctx); err != nil || len(all) != 1 || all[0].URL != a {
				t.Errorf("List with a copied row: %v, %v; want a alone", all, err)
			}
			err = s.Update(ctx, b, func(c *oauth.Credential) (*oauth.Credential, error) {
				if c != nil {
					return nil, fmt.Errorf("Update of a copied row passed %s's credential", c.URL)
				}
				return nil, nil // as Logout: the broken row is deleted
			})
			if err != nil {
				t.Errorf("Update of a copied row: %v", err)
			}
			if n := len(rows(t, s)); n != 1 {
				t.Errorf("%d rows after deleting the copied one, want 1", n)
			}

			// A changed byte: a does not open.
			changed := bytes.Clone(after[0].sealed)
			changed[len(changed)-1] ^= 1
			if _, err := s.db.Exec(s.q(`UPDATE `+table+` SET ciphertext = ? WHERE key = ?`), changed, a); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, a); !errors.Is(err, ErrCannotOpen) || !errors.Is(err, oauth.ErrNotSignedIn) {
				t.Errorf("Get of a changed row: %v, want ErrCannotOpen and ErrNotSignedIn", err)
			}
			put(t, s, a, ca) // sign in again: it is written anew
			put(t, s, b, cb)

			// Another key: a clear error naming the variables and the key ids.
			wrongKey := newKey(t)
			wrong := open(t, dsn, keys(t, wrongKey, ""))
			_, err = wrong.Get(ctx, a)
			for _, w := range []string{KeyEnv, PreviousKeyEnv, k.ID(), wrong.keys.ID(), a, "DELETE FROM " + table} {
				if !strings.Contains(fmtErr(err), w) {
					t.Errorf("Get with another key: %v; want it to say %q", err, w)
				}
			}
			if !errors.Is(err, ErrCannotOpen) || errors.Is(err, oauth.ErrNotSignedIn) {
				t.Errorf("Get with another key: %v, want ErrCannotOpen, and not ErrNotSignedIn (a sign-in would overwrite what the right key reads)", err)
			}
			if _, err := wrong.List(ctx); !errors.Is(err, ErrCannotOpen) {
				t.Errorf("List with another key: %v, want ErrCannotOpen", err)
			}
			if err := wrong.Update(ctx, a, func(*oauth.Credential) (*oauth.Credential, error) { return cred("a", a, "wrong"), nil }); !errors.Is(err, ErrCannotOpen) {
				t.Errorf("Update with another key: %v, want ErrCannotOpen", err)
			}
			if c, err := s.Get(ctx, a); err != nil || c.AccessToken != ca.AccessToken {
				t.Errorf("after an Update with another key, the right key reads %v, %v", c, err)
			}
			// A row relabelled with the other key's id does not open under it either.
			if _, err := s.db.Exec(s.q(`UPDATE `+table+` SET key_id = ? WHERE key = ?`), wrong.keys.ID(), a); err != nil {
				t.Fatal(err)
			}
			if _, err := wrong.Get(ctx, a); !errors.Is(err, ErrCannotOpen) {
				t.Errorf("Get of a row relabelled with the reader's key id: %v, want ErrCannotOpen", err)
			}
			for _, c := range []*oauth.Credential{ca, cb} {
				if strings.Contains(fmtErr(err), string(c.AccessToken)) || strings.Contains(fmtErr(err), wrongKey) {
					t.Errorf("a secret in the error: %v", err)
				}
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRotation: with the new key in TOOLSHED_TOKEN_KEY and the old in
// TOOLSHED_TOKEN_KEY_PREVIOUS, rows sealed with the old one are read, sealed with
// the new one when updated, and Rekey seals the rest; then the new key alone reads
// them all.
func TestRotation(t *testing.T) {
	for _, db := range pgtest.Stores(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := db.DSN(t)
			oldKey, newKeyS := newKey(t), newKey(t)
			old := open(t, dsn, keys(t, oldKey, ""))
			a, b := "https://a.example/mcp", "https://b.example/mcp"
			put(t, old, a, cred("a", a, "a1"))
			put(t, old, b, cred("b", b, "b1"))

			t.Setenv(KeyEnv, newKeyS)
			t.Setenv(PreviousKeyEnv, oldKey)
			rotating, err := Open(ctx, dsn, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer rotating.Close()
			if all, err := rotating.List(ctx); err != nil || len(all) != 2 {
				t.Fatalf("List while rotating: %v, %v", all, err)
			}
			err = rotating.Update(ctx, a, func(c *oauth.Credential) (*oauth.Credential, error) {
				c.AccessToken = "access-token-a2" // a refresh
				return c, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]string{}
			for _, r := range rows(t, rotating) {
				ids[r.key] = r.keyID
			}
			if ids[a] != rotating.keys.ID() || ids[b] != old.keys.ID() {
				t.Fatalf("key ids after updating a: %v; want a under the new key %s, b under the old %s", ids, rotating.keys.ID(), old.keys.ID())
			}
			newOnly := open(t, dsn, keys(t, newKeyS, ""))
			if c, err := newOnly.Get(ctx, a); err != nil || c.AccessToken != "access-token-a2" {
				t.Errorf("the new key alone, the updated row: %v, %v", c, err)
			}
			if _, err := newOnly.Get(ctx, b); !errors.Is(err, ErrCannotOpen) || !strings.Contains(err.Error(), PreviousKeyEnv) {
				t.Errorf("the new key alone, a row not yet rewritten: %v; want ErrCannotOpen saying to set %s", err, PreviousKeyEnv)
			}
			if n, err := rotating.Rekey(ctx); err != nil || n != 1 {
				t.Fatalf("Rekey = %d, %v; want 1 rewritten", n, err)
			}
			all, err := newOnly.List(ctx)
			if err != nil || len(all) != 2 || all[1].AccessToken != "access-token-b1" {
				t.Fatalf("the new key alone after Rekey: %v, %v", all, err)
			}
			if _, err := old.Get(ctx, a); !errors.Is(err, ErrCannotOpen) {
				t.Errorf("the old key after the rotation: %v, want ErrCannotOpen", err)
			}
		})
	}
}

// FuzzParseKeys: no input panics, an accepted key is 32 bytes that seal and open,
// and no error quotes what it was given.
func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{"", " ", "abc", "correct horse", base64.StdEncoding.EncodeToString(make([]byte, 32)), base64.RawURLEncoding.EncodeToString(make([]byte, 31)) + "_-"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, current, previous string) {
		k, err := ParseKeys(current, previous)
		if err != nil {
			for _, v := range []string{strings.TrimSpace(current), strings.TrimSpace(previous)} {
				if len(v) >= 8 && strings.Contains(err.Error(), v) {
					t.Fatalf("error %q quotes a key", err)
				}
			}
			return
		}
		id, sealed := k.seal("https://a.example/mcp", []byte("x"))
		if plain, broken, err := k.open("https://a.example/mcp", id, rowFormat, sealed); err != nil || broken || string(plain) != "x" {
			t.Fatalf("a key that does not open what it sealed: %v", err)
		}
	})
}
