package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// maxToolText bounds the text embedded for one tool, in bytes: the name, title and
// description carry what a tool does, and models have short contexts (512 tokens for
// many); a long parameter list is cut rather than sent to fail.
const maxToolText = 2000

// ToolText is what is embedded for a tool: the text search indexes (an override's title,
// description, keywords and aliases replacing or joining the server's), with
// parameter names and descriptions last so a cut loses the least.
func ToolText(t *catalog.Tool) string {
	var b strings.Builder
	b.WriteString(t.Qualified)
	title, desc := t.Title, t.Description
	if t.Search.Title != "" {
		title = t.Search.Title
	}
	if t.Search.Description != "" {
		desc = t.Search.Description
	}
	for _, s := range []string{title, desc, strings.Join(t.Search.Aliases, ", "), strings.Join(t.Search.Keywords, ", ")} {
		if s = strings.TrimSpace(s); s != "" {
			b.WriteString("\n")
			b.WriteString(s)
		}
	}
	for i, p := range t.Params {
		if i == 0 {
			b.WriteString("\nparameters:")
		}
		b.WriteString(" ")
		b.WriteString(p.Name)
		if d := strings.TrimSpace(p.Description); d != "" {
			b.WriteString(" (" + d + ")")
		}
		if i < len(t.Params)-1 {
			b.WriteString(";")
		}
	}
	s := b.String()
	if len(s) > maxToolText {
		s = s[:maxToolText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// BuildOptions shape Build.
type BuildOptions struct {
	// CacheDir is where vectors are kept between runs; empty means CacheDir(), and "-"
	// keeps nothing.
	CacheDir string
	// Progress, when set, is told of each batch embedded: done and total texts to embed
	// (cached ones are not counted). It is called from one goroutine at a time.
	Progress func(done, total int)
	// Warn, when set, is told of problems that cost time but not correctness: a cache
	// or store that cannot be read or written.
	Warn func(error)
	// Store, when set, keeps the vectors in place of the file cache: the search log's
	// database (searchlog.Log), which replicas share, so that each tool is embedded
	// once for all of them. A store that fails is warned about and the file cache used
	// for this Build instead.
	Store Store
}

// Store keeps tool vectors by the model, dimensions and document prefix they were made
// with and the SHA-256 of the text embedded. The bytes are the vector as this package
// encodes it; a store keeps them as they are. searchlog.Log is one.
type Store interface {
	// LoadVectors returns the stored vectors among hashes, by hash.
	LoadVectors(ctx context.Context, model string, dimensions int, prefix string, hashes [][32]byte) (map[[32]byte][]byte, error)
	// SaveVectors stores vectors, by hash.
	SaveVectors(ctx context.Context, model string, dimensions int, prefix string, vecs map[[32]byte][]byte) error
}

// BuildStats says what Build did.
type BuildStats struct {
	Tools    int // vectors wanted
	Cached   int // found in the cache or the store
	Embedded int // sent to the endpoint
	// StoreFailed is set when Store failed and the file cache served instead.
	StoreFailed bool
	// Refused counts the texts the endpoint refused (ErrRejected: longer than the
	// model takes, say): they have no vector, and search ranks their tools by words
	// alone.
	Refused int
}

// Build returns a vector for each text, in order, embedding with c only those texts
// whose vectors the cache lacks (a text's vector is keyed by its SHA-256 in a file for
// the model, dimensions and document prefix), in batches of c's BatchSize with at most
// c's Concurrency requests at once. What was embedded is cached even when a later
// batch fails, so that a retry resumes rather than restarts. An empty text gets no
// vector, as does one the endpoint refuses (see BuildStats.Refused): no search finds its
// row by its vector.
func Build(ctx context.Context, c *Client, texts []string, opts BuildOptions) (*Vectors, BuildStats, error) {
	stats := BuildStats{Tools: len(texts)}
	warn := func(err error) {
		if opts.Warn != nil && err != nil {
			opts.Warn(err)
		}
	}
	dir := opts.CacheDir
	if dir == "" {
		d, err := CacheDir()
		warn(err)
		if err != nil {
			dir = "-"
		} else {
			dir = d
		}
	}
	key := c.cacheKey()
	hashes := make([]textHash, len(texts))
	for i, t := range texts {
		hashes[i] = hashText(t)
	}
	cache := map[textHash]quantized{}
	useStore := opts.Store != nil
	if useStore {
		var err error
		if cache, err = c.loadStore(ctx, opts.Store, hashes); err != nil {
			warn(fmt.Errorf("%w: %v; using the file cache instead", ErrStore, err))
			useStore, stats.StoreFailed = false, true
			cache = map[textHash]quantized{}
		}
	}
	var path string
	if !useStore && dir != "-" {
		path = cacheFile(dir, key)
		var err error
		cache, err = loadCache(path, key)
		warn(err)
	}
	var todo []int // positions of texts to embed, one per distinct hash
	seen := map[textHash]bool{}
	for i, h := range hashes {
		if texts[i] == "" {
			continue // nothing to embed: no vector
		}
		if _, ok := cache[h]; ok {
			if !seen[h] {
				stats.Cached++
			}
		} else if !seen[h] {
			todo = append(todo, i)
		}
		seen[h] = true
	}
	err := embedAll(ctx, c, texts, todo, hashes, cache, &stats, opts.Progress)
	var refused error
	if r, ok := err.(refusals); ok {
		refused, err = r, nil
	}
	if stats.Embedded > 0 && useStore {
		if serr := c.saveStore(ctx, opts.Store, cache, hashes, todo); serr != nil {
			warn(fmt.Errorf("%w: %v; keeping the vectors in the file cache instead", ErrStore, serr))
			stats.StoreFailed = true
			if dir != "-" {
				path = cacheFile(dir, key)
				old, _ := loadCache(path, key)
				for h, q := range cache {
					old[h] = q
				}
				cache = old
			}
		}
	}
	if path != "" && stats.Embedded > 0 {
		warn(saveCache(path, key, cache, hashes))
	}
	if err != nil {
		return nil, stats, err
	}
	rows := make([]quantized, len(texts))
	dim := -1
	for i, h := range hashes {
		if texts[i] != "" {
			rows[i] = cache[h] // none for a text the endpoint refused
		}
		if len(rows[i].q) == 0 {
			continue
		}
		if dim < 0 {
			dim = len(rows[i].q)
		}
		if len(rows[i].q) != dim {
			return nil, stats, fmt.Errorf("%w: the model gave vectors of %d and %d dimensions; set its dimensions, or delete %s if the model changed", ErrBadResponse, dim, len(rows[i].q), path)
		}
	}
	if refused != nil {
		if dim < 0 {
			return nil, stats, refused.(refusals).first // no text has a vector to search with
		}
		warn(refused)
	}
	return newVectors(rows), stats, nil
}

// embedAll embeds texts[todo] in batches, at most c.opts.Concurrency at once, putting
// each vector in cache by its hash. A batch the endpoint does not answer within the
// request timeout is split in two and each half sent again, down to single texts, and
// the batches after it are sent at the size that worked: a slow endpoint (a small
// machine running the model on its CPU) gets batches it can answer in time rather than
// failing the build. It stops at the first other error, or a single text that times
// out.
func embedAll(ctx context.Context, c *Client, texts []string, todo []int, hashes []textHash, cache map[textHash]quantized, stats *BuildStats, progress func(done, total int)) error {
	if len(todo) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu           sync.Mutex
		firstErr     error
		firstRefusal error // the endpoint's word on the first text it refused
		wg           sync.WaitGroup
		size         = c.opts.BatchSize // shrinks when a batch times out
	)
	var send func(batch []int) error
	send = func(batch []int) error {
		in := make([]string, len(batch))
		for i, p := range batch {
			in[i] = texts[p]
		}
		vecs, err := c.Documents(ctx, in)
		if errors.Is(err, ErrRejected) && ctx.Err() == nil {
			// The texts themselves were refused: the one at fault is found by halves
			// and left without a vector; the others are embedded.
			if len(batch) == 1 {
				mu.Lock()
				stats.Refused++
				if firstRefusal == nil {
					firstRefusal = err
				}
				mu.Unlock()
				return nil
			}
			half := len(batch) / 2
			if err := send(batch[:half]); err != nil {
				return err
			}
			return send(batch[half:])
		}
		if errors.Is(err, ErrTimeout) && len(batch) > 1 && ctx.Err() == nil {
			half := len(batch) / 2
			mu.Lock()
			size = min(size, half)
			mu.Unlock()
			if err := send(batch[:half]); err != nil {
				return err
			}
			return send(batch[half:])
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for i, p := range batch {
			q, ok := quantize(vecs[i])
			if !ok {
				continue // decode rejects zero vectors; unreachable
			}
			cache[hashes[p]] = q
		}
		stats.Embedded += len(batch)
		if progress != nil {
			progress(stats.Embedded, len(todo))
		}
		return nil
	}
	sem := make(chan struct{}, c.opts.Concurrency)
	for start := 0; start < len(todo); {
		mu.Lock()
		n := size
		mu.Unlock()
		batch := todo[start:min(start+n, len(todo))]
		start += len(batch)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := send(batch); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
	}
	if firstErr == nil && stats.Refused > 0 {
		return refusals{stats.Refused, len(todo), firstRefusal}
	}
	return firstErr
}

// refusals says that the endpoint refused some texts, which Build leaves without a
// vector: a warning, not a failure.
type refusals struct {
	n, of int
	first error
}

func (r refusals) Error() string {
	return fmt.Sprintf("%d of the %d tools embedded were refused by the endpoint, so search ranks them by words alone: %v", r.n, r.of, r.first)
}

// ToolTexts is ToolText of each of snap's tools, in snapshot order: what Build takes
// for a catalog, so that vector i is tool i.
func ToolTexts(snap *catalog.Snapshot) []string {
	texts := make([]string, snap.Len())
	for i := range texts {
		texts[i] = ToolText(snap.Tool(i))
	}
	return texts
}
