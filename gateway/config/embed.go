package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/embed"
)

// Embed configures hybrid search with the user's own embedding model (package embed,
// docs/embeddings.md): the file's counterpart of serve's --embed-* flags, which
// override it key by key. The zero value is no embeddings.
type Embed struct {
	// URL is the endpoint (OpenAI /v1/embeddings or Ollama /api/embed) and Model the
	// model it serves; both or neither. Expanded.
	URL, Model string
	// Dimensions, when positive, asks for vectors of that size.
	Dimensions int
	// QueryPrefix and DocumentPrefix are put before queries and tools' texts.
	QueryPrefix, DocumentPrefix string
	// QueryTimeout bounds a query's embedding; 0 means the command's default.
	QueryTimeout time.Duration
	// APIKeyEnv names the environment variable the endpoint's key is read from:
	// embed.APIKeyEnv when empty. The key itself never goes in the file.
	APIKeyEnv string
}

// On reports whether the section asks for embeddings.
func (e Embed) On() bool { return e.URL != "" }

// embedKeys are the keys of the embed section, in the order messages list them.
var embedKeys = []string{"url", "model", "dimensions", "query_prefix", "document_prefix", "query_timeout", "api_key_env"}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// embedSection reads embed: {url, model, dimensions, query_prefix, document_prefix,
// query_timeout, api_key_env}. Unlike most settings, a mistake here is an error, not a
// warning: a section that is silently ignored would have search, and any measurement
// of it, run on words alone while the user believes otherwise.
func (l *loader) embedSection(n *yaml.Node, key string) (Embed, error) {
	var e Embed
	if isNull(n) {
		return e, nil
	}
	if n.Kind != yaml.MappingNode {
		return e, fmt.Errorf("%w: %s is %s, not a mapping; write it as {url: http://localhost:11434/api/embed, model: nomic-embed-text}", ErrConfig, key, kindName(n))
	}
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrConfig, k, fmt.Sprintf(format, args...)))
	}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		text := func() (string, bool) {
			v, ok := str(p.val)
			if !ok {
				bad(k, "is %s; write a string", kindName(p.val))
			}
			return v, ok
		}
		switch p.key {
		case "url":
			if v, ok := text(); ok {
				e.URL = l.expand(v, k)
			}
		case "model":
			if v, ok := text(); ok {
				e.Model = l.expand(v, k)
			}
		case "query_prefix":
			e.QueryPrefix, _ = text()
		case "document_prefix":
			e.DocumentPrefix, _ = text()
		case "dimensions":
			i, ok := intOf(p.val)
			if !ok || i < 0 || i > embed.MaxDimensions {
				bad(k, "%s is not a whole number of dimensions from 0 (the model's own) to %d, the most toolshed keeps; write such as 768", describe(p.val), embed.MaxDimensions)
				continue
			}
			e.Dimensions = i
		case "query_timeout":
			d, problem := duration(p.val)
			if problem == "" && d <= 0 {
				problem = "not positive"
			}
			if problem != "" {
				bad(k, "%s is %s; write a duration such as 300ms or 2s", describe(p.val), problem)
				continue
			}
			e.QueryTimeout = d
		case "api_key_env":
			v, ok := text()
			if ok && !envName.MatchString(v) {
				bad(k, "%q is not the name of an environment variable; name the variable that holds the key, such as %s", v, embed.APIKeyEnv)
				continue
			}
			e.APIKeyEnv = v
		case "api_key", "key", "token", "apikey", "api-key":
			bad(k, "the key never goes in the file; export it in an environment variable (%s by default) and, for another variable, name it with api_key_env", embed.APIKeyEnv)
		default:
			bad(k, "unknown key; embed takes %s", strings.Join(embedKeys, ", "))
		}
	}
	if len(errs) == 0 {
		switch {
		case e.URL == "" && e.Model == "" && (e.Dimensions != 0 || e.QueryPrefix != "" || e.DocumentPrefix != "" || e.QueryTimeout != 0 || e.APIKeyEnv != ""):
			bad(key, "has settings but no url and model; add them, such as url: http://localhost:11434/api/embed and model: nomic-embed-text, or remove the section")
		case e.URL == "" != (e.Model == ""):
			bad(key, "needs both url and model, such as url: http://localhost:11434/api/embed and model: nomic-embed-text")
		case e.URL != "":
			if _, err := embed.New(embed.Options{URL: e.URL, Model: e.Model, Dimensions: e.Dimensions, APIKey: "-"}); err != nil {
				bad(key+".url", "%v", err)
			}
		}
	}
	if e.APIKeyEnv == "" {
		e.APIKeyEnv = embed.APIKeyEnv
	}
	return e, errors.Join(errs...)
}
