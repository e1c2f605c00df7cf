package messages

import "testing"

// A fifoMap keeps at most its bound, forgetting the oldest first; a key kept already is
// not replaced, and a key taken is gone.
func TestFifoMap(t *testing.T) {
	var f fifoMap[int, string]
	for i := range 5 {
		if !f.add(i, "v", 3) {
			t.Fatalf("add %d refused", i)
		}
	}
	if f.len() != 3 {
		t.Fatalf("%d kept, want the bound 3", f.len())
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := f.get(i); ok != want {
			t.Errorf("get %d = %v, want %v", i, ok, want)
		}
	}
	if f.add(4, "other", 3) {
		t.Errorf("a kept key was added again")
	}
	if v, _ := f.get(4); v != "v" {
		t.Errorf("a kept key was replaced: %q", v)
	}
	if _, ok := f.take(3); !ok {
		t.Fatal("take 3 found nothing")
	}
	if _, ok := f.get(3); ok || f.len() != 2 {
		t.Errorf("a taken key is still kept (%d kept)", f.len())
	}
	for i := 10; i < 20; i++ {
		f.add(i, "v", 3)
		if f.len() > 3 {
			t.Fatalf("%d kept after adding %d, over the bound", f.len(), i)
		}
	}
}
