package embed

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: no answer an endpoint sends makes decode panic, and what it accepts is n
// finite, non-zero vectors of one dimension.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`), false)
	f.Add([]byte(`{"model":"m","embeddings":[[0.1,0.2]],"total_duration":1,"load_duration":1,"prompt_eval_count":1}`), true)
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1]}]}`), false)
	f.Add([]byte(`{"embeddings":[[1e39]]}`), true)
	f.Fuzz(func(t *testing.T, raw []byte, ollama bool) {
		c := &Client{format: FormatOpenAI}
		if ollama {
			c.format = FormatOllama
		}
		vecs, err := c.decode(raw, 1)
		if err != nil {
			return
		}
		if len(vecs) != 1 || len(vecs[0]) == 0 {
			t.Fatalf("accepted %q as %v", raw, vecs)
		}
		if _, ok := quantize(vecs[0]); !ok {
			t.Fatalf("accepted a vector without direction: %q", raw)
		}
	})
}

// FuzzLoadCache: a damaged cache file never panics; it is an empty cache and an error.
func FuzzLoadCache(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "good.vec")
	q, _ := quantize([]float32{0.5, -0.25, 1})
	if err := saveCache(good, "k", map[textHash]quantized{hashText("a"): q}, []textHash{hashText("a")}); err != nil {
		f.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	f.Add(data)
	f.Add(data[:len(data)-1])
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.vec")
		os.WriteFile(path, data, 0o644)
		got, err := loadCache(path, "k")
		if err != nil && len(got) != 0 {
			t.Fatalf("an error with %d vectors", len(got))
		}
		for _, v := range got {
			if !(v.scale > 0) || len(v.q) == 0 {
				t.Fatalf("accepted %+v", v)
			}
		}
	})
}
