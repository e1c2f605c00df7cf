package embed_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/searchlog"
)

func openLog(t *testing.T, dsn string) *searchlog.Log {
	t.Helper()
	l, err := searchlog.Open(context.Background(), dsn, searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// TestBuildStore: with the search log's database as the store, a second toolshed (its
// own Log and no file cache) embeds nothing, a catalog change embeds only the changed
// tools, and another model or document prefix is another set of vectors.
func TestBuildStore(t *testing.T) {
	for _, store := range pgtest.Stores(t) {
		t.Run(store.Name, func(t *testing.T) {
			srv := embedtest.Start()
			defer srv.Close()
			db := store.DSN(t)
			c := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, BatchSize: 4})
			in := texts(10)
			ctx := context.Background()
			build := func(c *embed.Client, in []string) (*embed.Vectors, embed.BuildStats) {
				t.Helper()
				var warns []error
				v, st, err := embed.Build(ctx, c, in, embed.BuildOptions{CacheDir: "-", Store: openLog(t, db), Warn: func(err error) { warns = append(warns, err) }})
				if err != nil || len(warns) > 0 {
					t.Fatalf("Build: %v, warnings %v", err, warns)
				}
				return v, st
			}
			v1, st := build(c, in)
			if st.Embedded != 10 || srv.Inputs() != 10 {
				t.Fatalf("first build: %+v, %d texts sent", st, srv.Inputs())
			}
			srv.Reset()
			v2, st := build(c, in)
			if st.Embedded != 0 || st.Cached != 10 || srv.Inputs() != 0 {
				t.Fatalf("second toolshed: %+v, %d texts sent; want all 10 from the store", st, srv.Inputs())
			}
			q := embedtest.Vector(in[3], embedtest.Dim)
			qf := make([]float32, len(q))
			for i, x := range q {
				qf[i] = float32(x)
			}
			if a, b := v1.TopK(qf, 3, nil), v2.TopK(qf, 3, nil); len(a) != 3 || a[0] != b[0] || a[1] != b[1] || a[2] != b[2] {
				t.Errorf("stored vectors rank differently: %v vs %v", a, b)
			}
			in[2], in[7] = "a changed tool", "another changed tool"
			if _, st := build(c, in); st.Embedded != 2 || srv.Inputs() != 2 {
				t.Fatalf("a change of 2 tools: %+v, %d texts sent; want 2", st, srv.Inputs())
			}
			srv.Reset()
			other := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, DocumentPrefix: "passage: "})
			if _, st := build(other, in); st.Embedded != 10 {
				t.Fatalf("another document prefix reused vectors: %+v", st)
			}
		})
	}
}

// TestBuildStoreFails: a store that fails costs nothing but the sharing: the vectors
// are built, kept in the file cache, and the failure is said.
func TestBuildStoreFails(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	log, err := searchlog.Open(context.Background(), filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log.Close(context.Background()) // closed: every read and write fails
	c := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model})
	dir := t.TempDir()
	var warns []error
	v, st, err := embed.Build(context.Background(), c, texts(5), embed.BuildOptions{CacheDir: dir, Store: log, Warn: func(err error) { warns = append(warns, err) }})
	if err != nil || v.Len() != 5 || !st.StoreFailed || st.Embedded != 5 {
		t.Fatalf("Build: %v, %+v", err, st)
	}
	if len(warns) != 1 || !errors.Is(warns[0], embed.ErrStore) || !strings.Contains(warns[0].Error(), "using the file cache instead") {
		t.Fatalf("warnings %v; want one that the store failed and the file cache serves", warns)
	}
	srv.Reset()
	if _, st, err := embed.Build(context.Background(), c, texts(5), embed.BuildOptions{CacheDir: dir}); err != nil || st.Cached != 5 || srv.Inputs() != 0 {
		t.Fatalf("the file cache did not keep the vectors: %v, %+v", err, st)
	}
}
