package hybrid

import (
	"context"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
)

// Background is one catalog's tool vectors being embedded off the request path: a
// server starts it when it first sees a catalog and searches with words alone until it
// is done, so that no request waits for thousands of tools to be embedded.
type Background struct {
	done  chan struct{}
	end   time.Time
	vecs  *embed.Vectors
	stats embed.BuildStats
	err   error
}

// StartBuild embeds snap's tools (embed.ToolTexts) with c, as embed.Build does, in a
// goroutine of its own that ends with ctx.
func StartBuild(ctx context.Context, c *embed.Client, snap *catalog.Snapshot, opts embed.BuildOptions) *Background {
	return StartBuildTexts(ctx, c, embed.ToolTexts(snap), opts)
}

// StartBuildTexts is StartBuild with the tools' texts given, one per tool of the
// snapshot the vectors are for, in order: "" for a tool that is to have no vector (one
// known by its name alone, whose vector would say little and come near many queries).
func StartBuildTexts(ctx context.Context, c *embed.Client, texts []string, opts embed.BuildOptions) *Background {
	b := &Background{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.vecs, b.stats, b.err = embed.Build(ctx, c, texts, opts)
		b.end = time.Now()
	}()
	return b
}

// Wait returns the vectors when the build is done, waiting for it at most until ctx
// ends: done is false when it is still under way. A failed build returns its error.
func (b *Background) Wait(ctx context.Context) (vecs *embed.Vectors, stats embed.BuildStats, err error, done bool) {
	select {
	case <-b.done:
		return b.vecs, b.stats, b.err, true
	case <-ctx.Done():
		return nil, embed.BuildStats{}, nil, false
	}
}

// Stale reports whether the build failed more than retry ago, so that another may be
// started: an endpoint that was down is tried again, but not at every search.
func (b *Background) Stale(retry time.Duration) bool {
	select {
	case <-b.done:
		return b.err != nil && time.Since(b.end) > retry
	default:
		return false
	}
}
