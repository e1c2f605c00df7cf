package stats

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// failing is a Source whose calls fail after the first, as a store that goes away in
// the middle of a read does.
type failing struct{ Source }

var errGone = errors.New("the database went away")

func (f failing) ReadCalls(ctx context.Context, since time.Time) iter.Seq2[searchlog.Call, error] {
	return func(yield func(searchlog.Call, error) bool) {
		for c, err := range f.Source.ReadCalls(ctx, since) {
			if !yield(c, err) {
				return
			}
			yield(searchlog.Call{}, errGone)
			return
		}
	}
}

// TestComputeFromFails: an error of the source is ComputeFrom's, with no report.
func TestComputeFromFails(t *testing.T) {
	searches, calls := recorded(t)
	r, err := ComputeFrom(context.Background(), failing{Records(searches, calls)}, Options{})
	if !errors.Is(err, errGone) || !reflect.DeepEqual(r, Report{}) {
		t.Errorf("ComputeFrom of a source that fails: %v and a report of %d searches, want %v and none", err, r.Searches, errGone)
	}
}

// TestComputeFromStore: the report of records read from a store one at a time is the
// report of the same records in memory.
func TestComputeFromStore(t *testing.T) {
	searches, calls := recorded(t)
	l, err := searchlog.Open(context.Background(), filepath.Join(t.TempDir(), "log.db"), searchlog.Options{MaxAge: -1, MaxRows: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	for _, s := range searches {
		l.Search(s)
	}
	for _, c := range calls {
		l.Call(c)
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts := Options{Since: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Catalog: testCatalog(t)}
	got, err := ComputeFrom(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := Compute(searches, calls, opts); !reflect.DeepEqual(got, want) {
		t.Errorf("the report read from the store differs from the one of the records in memory:\n%+v\n%+v", got, want)
	}
}
