package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/messages"
	"github.com/toolshed/toolshed/search"
)

// embedFlags are the flags that turn on hybrid search, shared by search, eval and serve.
type embedFlags struct {
	url, model, queryPrefix, docPrefix *string
	dimensions                         *int
	queryTimeout, timeout              *time.Duration
	// apiKeyEnv names the variable the key is read from (the config's api_key_env);
	// empty means embed.APIKeyEnv.
	apiKeyEnv string
}

// withConfig takes the config file's embed section for every flag not given on the
// command line: flags override the file key by key.
func (f *embedFlags) withConfig(fs *flag.FlagSet, e config.Embed) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	str := func(name string, dst *string, v string) {
		if !set[name] && v != "" {
			*dst = v
		}
	}
	str("embed-url", f.url, e.URL)
	str("embed-model", f.model, e.Model)
	str("embed-query-prefix", f.queryPrefix, e.QueryPrefix)
	str("embed-document-prefix", f.docPrefix, e.DocumentPrefix)
	if !set["embed-dimensions"] && e.Dimensions != 0 {
		*f.dimensions = e.Dimensions
	}
	if !set["embed-query-timeout"] && e.QueryTimeout != 0 {
		*f.queryTimeout = e.QueryTimeout
	}
	f.apiKeyEnv = e.APIKeyEnv
}

// embedSynopsis names the embedding flags in a command's usage line.
const embedSynopsis = "[--embed-url URL --embed-model NAME] [--embed-dimensions N] [--embed-query-prefix TEXT] [--embed-document-prefix TEXT] [--embed-query-timeout DURATION] [--embed-timeout DURATION]"

// addEmbedFlags adds the flags; queryTimeout is the default wait for a query's
// embedding: short for a server, whose searches must not stall, and long for a person's
// one search or an eval, where a model that is still loading (seconds, on the first
// query) would otherwise be measured as words alone.
func addEmbedFlags(fs *flag.FlagSet, queryTimeout time.Duration) *embedFlags {
	return &embedFlags{
		url:          fs.String("embed-url", "", "fuse word search with embeddings from `URL`: an OpenAI-format /v1/embeddings endpoint or Ollama's /api/embed (key from $"+embed.APIKeyEnv+")"),
		model:        fs.String("embed-model", "", "embedding model `NAME` the endpoint serves, such as nomic-embed-text"),
		dimensions:   fs.Int("embed-dimensions", 0, "ask the model for vectors of `N` dimensions (0: the model's own)"),
		queryPrefix:  fs.String("embed-query-prefix", "", "`TEXT` put before each query (nomic: \"search_query: \", e5: \"query: \")"),
		docPrefix:    fs.String("embed-document-prefix", "", "`TEXT` put before each tool's text (nomic: \"search_document: \", e5: \"passage: \")"),
		queryTimeout: fs.Duration("embed-query-timeout", queryTimeout, "wait at most `DURATION` for a query's embedding, then answer with words alone"),
		timeout:      fs.Duration("embed-timeout", embed.DefaultTimeout, "wait at most `DURATION` for one batch of tools' embeddings; a batch that takes longer is split and sent again, down to single tools"),
	}
}

// on reports whether hybrid search was asked for, and checks the flags belong together.
func (f *embedFlags) on() (bool, error) {
	if *f.url == "" && *f.model == "" {
		return false, nil
	}
	if *f.url == "" || *f.model == "" {
		return false, usageErr("give both --embed-url and --embed-model, such as --embed-url http://localhost:11434/api/embed --embed-model nomic-embed-text")
	}
	return true, nil
}

// searcher embeds snap's tools (only those the cache lacks, with progress on stderr)
// and returns the hybrid searcher over ix.
func (f *embedFlags) searcher(ix *search.Index, stderr io.Writer) (*hybrid.Searcher, embed.BuildStats, error) {
	c, err := f.client()
	if err != nil {
		return nil, embed.BuildStats{}, err
	}
	snap := ix.Snapshot()
	vecs, stats, err := embed.Build(context.Background(), c, embed.ToolTexts(snap), embed.BuildOptions{
		Progress: embedProgress(stderr, *f.model),
		Warn:     func(err error) { fmt.Fprintf(stderr, "toolshed: %v\n", err) },
	})
	if err != nil {
		return nil, stats, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return hybrid.New(ix, vecs, c, hybrid.Options{QueryTimeout: *f.queryTimeout, Logger: logger}), stats, nil
}

// query embeds one query within --embed-query-timeout: a person's search asks for it
// before the tools' vectors, so that an endpoint that does not answer in that time is
// known at once.
func (f *embedFlags) query(q string) ([]float32, error) {
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *f.queryTimeout)
	defer cancel()
	v, err := c.Query(ctx, q)
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && errors.Is(err, embed.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s did not embed the query within --embed-query-timeout %v", embed.ErrTimeout, c.Endpoint(), *f.queryTimeout)
	}
	return v, err
}

// gateway sets the gateway's embedding options when hybrid search was asked for.
func (f *embedFlags) gateway(opts *gateway.Options) error {
	c, err := f.clientIfOn()
	if c == nil || err != nil {
		return err
	}
	opts.Embed, opts.EmbedQueryTimeout = c, *f.queryTimeout
	return nil
}

// proxy sets the proxy's embedding options when hybrid search was asked for: its
// tool_search_tool_bm25 then fuses words and vectors, with progress of a long first
// embedding on stderr.
func (f *embedFlags) proxy(p *messages.Proxy, stderr io.Writer) error {
	c, err := f.clientIfOn()
	if c == nil || err != nil {
		return err
	}
	p.Embed, p.EmbedQueryTimeout = c, *f.queryTimeout
	p.EmbedBuild = embed.BuildOptions{
		Progress: embedProgress(stderr, *f.model),
		Warn:     func(err error) { fmt.Fprintf(stderr, "toolshed: %v\n", err) },
	}
	return nil
}

// clientIfOn is the endpoint's client when hybrid search was asked for, nil otherwise.
func (f *embedFlags) clientIfOn() (*embed.Client, error) {
	if on, err := f.on(); !on || err != nil {
		return nil, err
	}
	return f.client()
}

func (f *embedFlags) client() (*embed.Client, error) {
	key := ""
	if f.apiKeyEnv != "" {
		key = os.Getenv(f.apiKeyEnv)
	}
	if *f.timeout <= 0 {
		return nil, usageErr("--embed-timeout must be a positive duration such as 2m, got %v", *f.timeout)
	}
	c, err := embed.New(embed.Options{URL: *f.url, Model: *f.model, Dimensions: *f.dimensions,
		QueryPrefix: *f.queryPrefix, DocumentPrefix: *f.docPrefix, APIKey: key, Timeout: *f.timeout})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return c, nil
}

// interactiveQueryTimeout is search's and eval's default wait for a query's embedding.
const interactiveQueryTimeout = 10 * time.Second

// embedProgress prints how far a first embedding has gone, at most once a second and
// at the end, so that a catalog of thousands of tools on a slow model shows it works.
func embedProgress(w io.Writer, model string) func(done, total int) {
	var (
		mu   sync.Mutex // the proxy embeds several tools lists at once
		last time.Time
	)
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); done == total || now.Sub(last) >= time.Second {
			last = now
			fmt.Fprintf(w, "toolshed: embedding tools with %s: %d/%d\n", model, done, total)
		}
	}
}
