package sqlstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The environment variables the keys are read from. A Kubernetes Secret reaches
// the replicas as these (env valueFrom secretKeyRef).
const (
	// KeyEnv holds the key credentials are sealed with: base64 of 32 random bytes.
	KeyEnv = "TOOLSHED_TOKEN_KEY"
	// PreviousKeyEnv optionally holds the key in use before KeyEnv's, while the key
	// is being rotated: rows sealed with it are still read, and sealed with the new
	// one when they are next written.
	PreviousKeyEnv = "TOOLSHED_TOKEN_KEY_PREVIOUS"
)

// ErrNoKey is wrapped by the error of Open, and of KeysFromEnv, when no key is set:
// credentials in a database are always encrypted, never stored as plaintext.
var ErrNoKey = errors.New("no key to encrypt credentials with")

// ErrBadKey is wrapped by the error for a key that is not base64 of 32 bytes.
var ErrBadKey = errors.New("the credentials key is not base64 of 32 bytes")

// ErrCannotOpen is wrapped by the error for a stored credential that no key at
// hand opens: it was sealed with another key, or changed, or moved from another
// row.
var ErrCannotOpen = errors.New("a stored credential cannot be decrypted")

// makeKey is how to make a key, said in every error about one.
const makeKey = "make one with `openssl rand -base64 32`"

// Keys are the AES-256 keys credentials are sealed with: the current one, which
// seals every write, and optionally the previous one, which only opens rows sealed
// before a rotation. Make them with ParseKeys or KeysFromEnv.
type Keys struct {
	current  *key
	previous *key
}

type key struct {
	id   string // names the key in rows and errors; see keyID
	aead cipher.AEAD
}

// KeysFromEnv reads the keys from TOOLSHED_TOKEN_KEY and, when it is set,
// TOOLSHED_TOKEN_KEY_PREVIOUS.
func KeysFromEnv() (*Keys, error) {
	return parseKeys(os.Getenv(KeyEnv), KeyEnv, os.Getenv(PreviousKeyEnv), PreviousKeyEnv)
}

// ParseKeys reads a current key and an optional previous one ("" for none), each
// base64 of 32 bytes (standard or URL alphabet, padded or not; surrounding space,
// such as the newline of a file, is ignored). Its errors never quote a key.
func ParseKeys(current, previous string) (*Keys, error) {
	return parseKeys(current, "the key", previous, "the previous key")
}

func parseKeys(current, currentName, previous, previousName string) (*Keys, error) {
	if strings.TrimSpace(current) == "" {
		if strings.TrimSpace(previous) != "" {
			return nil, fmt.Errorf("%w: %s is set but %s is not; %s holds the key to seal with, %s only the one it replaces", ErrNoKey, previousName, currentName, currentName, previousName)
		}
		return nil, fmt.Errorf("%w: set %s, as toolshed never keeps credentials in a database unencrypted; %s (for replicas, put it in a Kubernetes Secret and give it to every replica as %s)", ErrNoKey, currentName, makeKey, KeyEnv)
	}
	k := &Keys{}
	var err error
	if k.current, err = parseKey(current, currentName); err != nil {
		return nil, err
	}
	if strings.TrimSpace(previous) != "" {
		if k.previous, err = parseKey(previous, previousName); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func parseKey(s, name string) (*key, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s is not base64 (%d characters); %s", ErrBadKey, name, len(s), makeKey)
	case len(raw) != 32:
		return nil, fmt.Errorf("%w: %s decodes to %d bytes, and AES-256 takes 32; %s", ErrBadKey, name, len(raw), makeKey)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &key{id: keyID(raw), aead: aead}, nil
}

// keyID names a key without giving it away: the start of a hash of it, which rows
// record so that a row is opened with the key that sealed it, and errors name the
// key a row needs.
func keyID(raw []byte) string {
	h := sha256.Sum256(append([]byte("toolshed credentials key id\x00"), raw...))
	return hex.EncodeToString(h[:8])
}

// ID names the current key (a hash of it, not the key).
func (k *Keys) ID() string { return k.current.id }

// rowFormat is the version of a row's sealed layout: the nonce and then
// AES-256-GCM of the credential's JSON. A later layout gets a new number.
const rowFormat = 1

// aad binds a sealed credential to its row: the layout, the key that sealed it and
// the row's key (the server's URL), so that a ciphertext copied to another
// server's row, or relabelled with another key, fails to open.
func aad(format int, keyID, rowKey string) []byte {
	return fmt.Appendf(nil, "toolshed credential\x00%d\x00%s\x00%s", format, keyID, rowKey)
}

// seal encrypts plaintext for the row rowKey with the current key, under a random
// nonce, and returns the key's id and the sealed bytes.
func (k *Keys) seal(rowKey string, plaintext []byte) (string, []byte) {
	nonce := make([]byte, k.current.aead.NonceSize(), k.current.aead.NonceSize()+len(plaintext)+k.current.aead.Overhead())
	rand.Read(nonce) // never fails (crypto/rand)
	return k.current.id, k.current.aead.Seal(nonce, nonce, plaintext, aad(rowFormat, k.current.id, rowKey))
}

// open decrypts the row rowKey, sealed with the key keyID in layout format.
// broken reports a row that its key does not open: changed, or copied from another
// row. Unlike a row sealed with a key not at hand, such a row is of no use to
// anyone, so it counts as no credential (see Store.Update).
func (k *Keys) open(rowKey, keyID string, format int, sealed []byte) (plain []byte, broken bool, err error) {
	if format > rowFormat {
		return nil, false, fmt.Errorf("the credential for %s is stored in layout %d, newer than this toolshed reads (%d); upgrade toolshed", rowKey, format, rowFormat)
	}
	var use *key
	for _, c := range []*key{k.current, k.previous} {
		if c != nil && c.id == keyID {
			use = c
		}
	}
	if use == nil {
		have := fmt.Sprintf("%s has key id %s", KeyEnv, k.current.id)
		if k.previous != nil {
			have += fmt.Sprintf(" and %s %s", PreviousKeyEnv, k.previous.id)
		}
		return nil, false, fmt.Errorf("%w: the credential for %s was sealed with the key of id %s, and %s; set %s to that key (or, rotating, put it in %s), or if it is lost, delete the row (DELETE FROM %s WHERE key = '%s') and sign in again",
			ErrCannotOpen, rowKey, keyID, have, KeyEnv, PreviousKeyEnv, table, strings.ReplaceAll(rowKey, "'", "''"))
	}
	n := use.aead.NonceSize()
	if len(sealed) < n+use.aead.Overhead() {
		return nil, true, fmt.Errorf("%w: the credential for %s is truncated (%d bytes)", ErrCannotOpen, rowKey, len(sealed))
	}
	plain, err = use.aead.Open(nil, sealed[:n], sealed[n:], aad(format, keyID, rowKey))
	if err != nil {
		return nil, true, fmt.Errorf("%w: the credential for %s fails its integrity check under key id %s: it was changed, or copied from another server's row", ErrCannotOpen, rowKey, keyID)
	}
	return plain, false, nil
}
