package searchlog

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"
)

// TestVectors: vectors are kept by model, dimensions, prefix and hash; a second store of
// the same key keeps the first; only the hashes asked for come back; a load marks what
// it returns as used, and what no toolshed used for MaxAge is pruned.
func TestVectors(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			l := open(t, b.dsn(t), Options{MaxAge: 24 * time.Hour, PruneInterval: time.Hour})
			flush(t, l) // the writer's first prune is done: it cannot race the test's
			h := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
			if err := l.SaveVectors(ctx, "m", 0, "", map[[32]byte][]byte{h("a"): {1, 2, 3}, h("b"): {4, 5, 6}}); err != nil {
				t.Fatal(err)
			}
			if err := l.SaveVectors(ctx, "m", 0, "", map[[32]byte][]byte{h("a"): {9, 9, 9}}); err != nil {
				t.Fatal(err)
			}
			if err := l.SaveVectors(ctx, "m", 256, "", map[[32]byte][]byte{h("a"): {7}}); err != nil {
				t.Fatal(err)
			}
			got, err := l.LoadVectors(ctx, "m", 0, "", [][32]byte{h("a"), h("c")})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || string(got[h("a")]) != "\x01\x02\x03" {
				t.Fatalf("loaded %v; want a's first vector alone", got)
			}
			for _, k := range []struct {
				model  string
				dims   int
				prefix string
				want   int
			}{{"m", 256, "", 1}, {"other", 0, "", 0}, {"m", 0, "passage: ", 0}} {
				if got, _ := l.LoadVectors(ctx, k.model, k.dims, k.prefix, [][32]byte{h("a"), h("b")}); len(got) != k.want {
					t.Errorf("%+v: %d vectors", k, len(got))
				}
			}
			// b was stored 2 days ago and a was loaded 2 days ago; a load now marks a
			// used, so pruning keeps a and drops b.
			old := time.Now().Add(-48 * time.Hour).UnixMicro()
			if err := l.st.tx(ctx, func(q querier) error { return q.exec(ctx, `UPDATE tool_vectors SET used = ?`, old) }); err != nil {
				t.Fatal(err)
			}
			if got, _ := l.LoadVectors(ctx, "m", 0, "", [][32]byte{h("a")}); len(got) != 1 {
				t.Fatal("a is gone before pruning")
			}
			l.prune(ctx)
			if got, _ := l.LoadVectors(ctx, "m", 0, "", [][32]byte{h("a"), h("b")}); len(got) != 1 || got[h("a")] == nil {
				t.Errorf("after pruning: %v; want a (used now) alone", got)
			}
		})
	}
}

// TestVectorsShortMaxAgeKeepsWhatIsLoaded: with a MaxAge shorter than a day, a vector a
// toolshed has just loaded (in use) is not pruned: the load marks it used whenever its
// mark would otherwise be old enough for pruning, not only after a day.
func TestVectorsShortMaxAgeKeepsWhatIsLoaded(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			l := open(t, b.dsn(t), Options{MaxAge: 2 * time.Hour, PruneInterval: time.Hour})
			flush(t, l) // the writer's first prune is done: it cannot race the test's
			h := sha256.Sum256([]byte("a"))
			if err := l.SaveVectors(ctx, "m", 0, "", map[[32]byte][]byte{h: {1, 2, 3}}); err != nil {
				t.Fatal(err)
			}
			// Stored, and last marked, 3 hours ago: past MaxAge, within touchAfter.
			old := time.Now().Add(-3 * time.Hour).UnixMicro()
			if err := l.st.tx(ctx, func(q querier) error { return q.exec(ctx, `UPDATE tool_vectors SET used = ?`, old) }); err != nil {
				t.Fatal(err)
			}
			if got, _ := l.LoadVectors(ctx, "m", 0, "", [][32]byte{h}); len(got) != 1 {
				t.Fatal("the vector is gone before pruning")
			}
			l.prune(ctx)
			if got, _ := l.LoadVectors(ctx, "m", 0, "", [][32]byte{h}); len(got) != 1 {
				t.Errorf("a vector loaded just before pruning was pruned (MaxAge 2h): every replica would embed it again")
			}
		})
	}
}
