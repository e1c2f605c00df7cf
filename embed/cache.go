package embed

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// ErrCache wraps a cache file that cannot be read or written. Build treats it as a
// warning: the vectors are recomputed, never wrong.
var ErrCache = errors.New("embed: vector cache")

// The cache file: the magic line, the key it was written for (a uvarint length, then the
// bytes), the dimension (uvarint), then records until the end: a 32-byte SHA-256 of the
// text embedded, the float32 scale (little endian), and dim int8 components. One file a
// model, dimensions and document prefix, so a change of any of them starts afresh.
const cacheMagic = "toolshed-embed-cache-v1\n"

// CacheDir is where vectors are cached by default: $XDG_CACHE_HOME/toolshed/embed on
// Linux (os.UserCacheDir elsewhere). A cache is a cache: deleting it costs one embedding
// of every tool.
func CacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: no cache directory (%v); set XDG_CACHE_HOME", ErrCache, err)
	}
	return filepath.Join(dir, "toolshed", "embed"), nil
}

// cacheKey names what a vector depends on besides its text.
func (c *Client) cacheKey() string {
	return "model=" + c.opts.Model + "\x00dimensions=" + strconv.Itoa(c.opts.Dimensions) + "\x00prefix=" + c.opts.DocumentPrefix
}

// cacheFile is the file for key in dir.
func cacheFile(dir, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".vec")
}

type textHash [32]byte

func hashText(s string) textHash { return sha256.Sum256([]byte(s)) }

// loadCache reads path's vectors: an absent file is an empty cache; a file written for
// another key or damaged is an ErrCache and an empty cache.
func loadCache(path, key string) (map[textHash]quantized, error) {
	out := map[textHash]quantized{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("%w: %v", ErrCache, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	bad := func(what string) (map[textHash]quantized, error) {
		return map[textHash]quantized{}, fmt.Errorf("%w: %s: %s; it will be rewritten", ErrCache, path, what)
	}
	magic := make([]byte, len(cacheMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != cacheMagic {
		return bad("not a toolshed vector cache")
	}
	klen, err := binary.ReadUvarint(r)
	if err != nil || klen > 1<<16 {
		return bad("damaged header")
	}
	k := make([]byte, klen)
	if _, err := io.ReadFull(r, k); err != nil || string(k) != key {
		return bad("written for another model")
	}
	dim, err := binary.ReadUvarint(r)
	if err != nil || dim == 0 || dim > 1<<16 {
		return bad("damaged header")
	}
	rec := make([]byte, 32+4+int(dim))
	for {
		if _, err := io.ReadFull(r, rec); err == io.EOF {
			return out, nil
		} else if err != nil {
			return bad("truncated record")
		}
		var h textHash
		copy(h[:], rec)
		s := math.Float32frombits(binary.LittleEndian.Uint32(rec[32:]))
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return bad("damaged record")
		}
		q := make([]int8, dim)
		for i, b := range rec[36:] {
			q[i] = int8(b)
		}
		out[h] = quantized{q: q, scale: s}
	}
}

// saveCache writes vecs to path atomically (a temporary file renamed), so a reader or
// a crash never sees half a file.
func saveCache(path, key string, vecs map[textHash]quantized) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".vec-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriter(f)
	w.WriteString(cacheMagic)
	w.Write(binary.AppendUvarint(nil, uint64(len(key))))
	w.WriteString(key)
	dim := 0
	for _, v := range vecs {
		dim = len(v.q)
		break
	}
	w.Write(binary.AppendUvarint(nil, uint64(dim)))
	rec := make([]byte, 32+4+dim)
	for h, v := range vecs {
		if len(v.q) != dim {
			continue // a model whose dimension changed: keep the majority's, recompute the rest
		}
		copy(rec, h[:])
		binary.LittleEndian.PutUint32(rec[32:], math.Float32bits(v.scale))
		for i, x := range v.q {
			rec[36+i] = byte(x)
		}
		w.Write(rec)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	return nil
}
