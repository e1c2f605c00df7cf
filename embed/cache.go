package embed

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// ErrCache wraps a cache file that cannot be read or written. Build treats it as a
// warning: the vectors are recomputed, never wrong.
var ErrCache = errors.New("embed: vector cache")

// ErrStore wraps a Store that failed; Build then uses the file cache.
var ErrStore = errors.New("embed: vector store")

// The cache file: the magic line, the key it was written for (a uvarint length, then the
// bytes), the dimension (uvarint), then records until the end: a 32-byte SHA-256 of the
// text embedded, the float32 scale (little endian), dim int8 components and, from v2,
// when a Build last wanted it (int64 Unix seconds, little endian). One file a model,
// dimensions and document prefix, so a change of any of them starts afresh.
const (
	cacheMagic   = "toolshed-embed-cache-v2\n"
	cacheMagicV1 = "toolshed-embed-cache-v1\n" // read, never written: no times
)

// Pruning (saveCache): a cache would otherwise grow by every tool text ever embedded.
// The vectors of the catalog being built are always kept; others while a Build wanted
// them within CacheMaxAge, at most CacheMaxOthers of them (the most recent). A file of
// another model, dimensions or prefix that no Build has written within CacheMaxAge is
// removed.
const (
	CacheMaxAge    = 30 * 24 * time.Hour
	CacheMaxOthers = 20000
)

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
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != cacheMagic && string(magic) != cacheMagicV1 {
		return bad("not a toolshed vector cache")
	}
	timed := string(magic) == cacheMagic
	loaded := time.Now().Unix() // a v1 record counts as wanted now: it has no time
	klen, err := binary.ReadUvarint(r)
	if err != nil || klen > 1<<16 {
		return bad("damaged header")
	}
	k := make([]byte, klen)
	if _, err := io.ReadFull(r, k); err != nil || string(k) != key {
		return bad("written for another model")
	}
	dim, err := binary.ReadUvarint(r)
	if err != nil || dim == 0 || dim > MaxDimensions {
		return bad("damaged header")
	}
	rec := make([]byte, 32+4+int(dim))
	if timed {
		rec = make([]byte, 32+4+int(dim)+8)
	}
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
		for i, b := range rec[36 : 36+dim] {
			q[i] = int8(b)
		}
		used := loaded
		if timed {
			used = int64(binary.LittleEndian.Uint64(rec[36+dim:]))
		}
		out[h] = quantized{q: q, scale: s, used: used}
	}
}

// saveCache writes vecs to path atomically (a temporary file renamed), so a reader or
// a crash never sees half a file. The vectors of current are marked wanted now; the
// others are pruned as CacheMaxAge and CacheMaxOthers say, and stale files of other
// keys in the directory removed.
func saveCache(path, key string, vecs map[textHash]quantized, current []textHash) error {
	vecs = prune(vecs, current, time.Now())
	removeStale(filepath.Dir(path), path, time.Now())
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
	rec := make([]byte, 32+4+dim+8)
	for h, v := range vecs {
		if len(v.q) != dim {
			continue // a model whose dimension changed: keep the majority's, recompute the rest
		}
		copy(rec, h[:])
		binary.LittleEndian.PutUint32(rec[32:], math.Float32bits(v.scale))
		for i, x := range v.q {
			rec[36+i] = byte(x)
		}
		binary.LittleEndian.PutUint64(rec[36+dim:], uint64(v.used))
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

// prune returns the vectors a cache file keeps: those of current, marked wanted at now,
// and of the others the CacheMaxOthers most recently wanted within CacheMaxAge.
func prune(vecs map[textHash]quantized, current []textHash, now time.Time) map[textHash]quantized {
	out := make(map[textHash]quantized, len(current))
	for _, h := range current {
		if v, ok := vecs[h]; ok {
			v.used = now.Unix()
			out[h] = v
		}
	}
	type other struct {
		h textHash
		v quantized
	}
	var others []other
	oldest := now.Add(-CacheMaxAge).Unix()
	for h, v := range vecs {
		if _, ok := out[h]; !ok && v.used >= oldest {
			others = append(others, other{h, v})
		}
	}
	if len(others) > CacheMaxOthers {
		slices.SortFunc(others, func(a, b other) int { return cmp.Compare(b.v.used, a.v.used) })
		others = others[:CacheMaxOthers]
	}
	for _, o := range others {
		out[o.h] = o.v
	}
	return out
}

// removeStale removes the cache files of dir other than keep that no Build has written
// within CacheMaxAge: vectors of a model, dimensions or prefix no longer used. Errors
// are ignored: a file left is only space.
func removeStale(dir, keep string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == keep || e.IsDir() || filepath.Ext(p) != ".vec" {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > CacheMaxAge {
			os.Remove(p)
		}
	}
}

// encodeVector is a vector as a Store keeps it: the float32 scale (little endian), then
// the int8 components.
func encodeVector(v quantized) []byte {
	b := make([]byte, 4+len(v.q))
	binary.LittleEndian.PutUint32(b, math.Float32bits(v.scale))
	for i, x := range v.q {
		b[4+i] = byte(x)
	}
	return b
}

// decodeVector reads what encodeVector wrote.
func decodeVector(b []byte) (quantized, bool) {
	if len(b) < 5 || len(b)-4 > MaxDimensions {
		return quantized{}, false
	}
	s := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if !(s > 0) || math.IsInf(float64(s), 0) {
		return quantized{}, false
	}
	q := make([]int8, len(b)-4)
	for i, x := range b[4:] {
		q[i] = int8(x)
	}
	return quantized{q: q, scale: s}, true
}

// loadStore reads the vectors of hashes from st. A stored vector that does not decode
// is left out, to be embedded again.
func (c *Client) loadStore(ctx context.Context, st Store, hashes []textHash) (map[textHash]quantized, error) {
	hs := make([][32]byte, len(hashes))
	for i, h := range hashes {
		hs[i] = h
	}
	got, err := st.LoadVectors(ctx, c.opts.Model, c.opts.Dimensions, c.opts.DocumentPrefix, hs)
	if err != nil {
		return nil, err
	}
	out := make(map[textHash]quantized, len(got))
	for h, b := range got {
		if q, ok := decodeVector(b); ok {
			out[h] = q
		}
	}
	return out, nil
}

// saveStore stores the vectors of the texts at todo that cache has (those embedded).
func (c *Client) saveStore(ctx context.Context, st Store, cache map[textHash]quantized, hashes []textHash, todo []int) error {
	out := make(map[[32]byte][]byte, len(todo))
	for _, i := range todo {
		if v, ok := cache[hashes[i]]; ok {
			out[hashes[i]] = encodeVector(v)
		}
	}
	return st.SaveVectors(ctx, c.opts.Model, c.opts.Dimensions, c.opts.DocumentPrefix, out)
}
