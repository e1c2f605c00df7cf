package embed

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPrune: a cache keeps the current catalog's vectors (marked wanted now), others
// wanted within CacheMaxAge up to CacheMaxOthers of them (the most recent), nothing
// older.
func TestPrune(t *testing.T) {
	now := time.Now()
	q, _ := quantize([]float32{1, 2})
	at := func(d time.Duration) quantized { v := q; v.used = now.Add(-d).Unix(); return v }
	vecs := map[textHash]quantized{
		hashText("current, old"):  at(90 * 24 * time.Hour),
		hashText("other, recent"): at(24 * time.Hour),
		hashText("other, old"):    at(CacheMaxAge + time.Hour),
	}
	got := prune(vecs, []textHash{hashText("current, old"), hashText("current, not embedded")}, now)
	if len(got) != 2 || got[hashText("current, old")].used != now.Unix() || got[hashText("other, recent")].used == 0 {
		t.Fatalf("pruned to %d vectors: %v", len(got), got)
	}
	// Past CacheMaxOthers, the most recently wanted others stay.
	many := map[textHash]quantized{}
	for i := range CacheMaxOthers + 10 {
		many[hashText(strconv.Itoa(i))] = at(time.Duration(i) * time.Second)
	}
	got = prune(many, nil, now)
	if len(got) != CacheMaxOthers {
		t.Fatalf("kept %d others, want %d", len(got), CacheMaxOthers)
	}
	for i := CacheMaxOthers; i < CacheMaxOthers+10; i++ {
		if _, ok := got[hashText(strconv.Itoa(i))]; ok {
			t.Fatalf("kept other %d, one of the 10 least recent", i)
		}
	}
}

// TestSaveCachePrunesAndRemovesStale: saving a cache file writes the pruned vectors
// with their times, and removes other models' files no Build wrote for CacheMaxAge.
func TestSaveCachePrunesAndRemovesStale(t *testing.T) {
	dir := t.TempDir()
	stale, fresh := filepath.Join(dir, "stale.vec"), filepath.Join(dir, "fresh.vec")
	other := filepath.Join(dir, "notes.txt")
	for _, p := range []string{stale, fresh, other} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	long := time.Now().Add(-CacheMaxAge - time.Hour)
	os.Chtimes(stale, long, long)
	os.Chtimes(other, long, long)
	q, _ := quantize([]float32{1, 2, 3})
	old := q
	old.used = time.Now().Add(-CacheMaxAge - time.Hour).Unix()
	path := filepath.Join(dir, "current.vec")
	if err := saveCache(path, "k", map[textHash]quantized{hashText("a"): q, hashText("gone"): old}, []textHash{hashText("a")}); err != nil {
		t.Fatal(err)
	}
	got, err := loadCache(path, "k")
	if err != nil || len(got) != 1 || got[hashText("a")].used < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("loaded %v, %v; want a alone, wanted now", got, err)
	}
	for p, want := range map[string]bool{stale: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestLoadCacheV1: a cache written before times were kept is read, its vectors counted
// as wanted now.
func TestLoadCacheV1(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(cacheMagicV1)
	b.Write(binary.AppendUvarint(nil, 1))
	b.WriteString("k")
	b.Write(binary.AppendUvarint(nil, 2))
	h := hashText("a")
	b.Write(h[:])
	b.Write(binary.LittleEndian.AppendUint32(nil, 0x3c010204)) // a positive scale
	b.Write([]byte{127, 1})
	path := filepath.Join(t.TempDir(), "v1.vec")
	os.WriteFile(path, b.Bytes(), 0o644)
	got, err := loadCache(path, "k")
	if err != nil || len(got) != 1 || got[h].q[0] != 127 || got[h].used == 0 {
		t.Fatalf("loaded %v, %v", got, err)
	}
}
