package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/redact"
)

// hooks apply the config's rules to every call of a real tool, whichever way it came.
type hooks struct {
	cfg     config.Hooks
	secrets map[string]bool
	mu      sync.Mutex
	out     io.Writer
	closer  io.Closer
}

func newHooks(cfg config.Hooks, stderr io.Writer) (*hooks, error) {
	h := &hooks{cfg: cfg, secrets: map[string]bool{}}
	for _, f := range cfg.SecretFields {
		h.secrets[strings.ToLower(f)] = true
	}
	for _, group := range [][]string{cfg.Allow, cfg.Deny, cfg.Approve} {
		for _, p := range group {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("hooks: %q is not a valid glob (use *, ? and [a-z])", p)
			}
		}
	}
	switch cfg.ActivityLog {
	case "":
	case "-":
		h.out = stderr
	default:
		f, err := os.OpenFile(cfg.ActivityLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("hooks.activity_log: %w", err)
		}
		h.out, h.closer = f, f
	}
	return h, nil
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// denied says why t may not be called, or "" when it may.
func (h *hooks) denied(t *catalog.Tool) string {
	if matchAny(h.cfg.Deny, t.Qualified) {
		return "hooks.deny"
	}
	if len(h.cfg.Allow) > 0 && !matchAny(h.cfg.Allow, t.Qualified) {
		return "not in hooks.allow"
	}
	return ""
}

// needsApproval reports whether calling t needs the user's approval.
func (h *hooks) needsApproval(t *catalog.Tool) bool {
	return matchAny(h.cfg.Approve, t.Qualified) || h.cfg.ApproveDestructive && t.Destructive()
}

// activity is one line of the activity log.
type activity struct {
	Time       time.Time       `json:"time"`
	Session    string          `json:"session"`
	Profile    string          `json:"profile"`
	Subject    string          `json:"subject,omitempty"` // an OAuth token's sub (see OAuthOptions.Subjects)
	Tool       string          `json:"tool"`
	Server     string          `json:"server"`
	Via        string          `json:"via"`
	DurationMS float64         `json:"duration_ms"`
	Outcome    string          `json:"outcome"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// log appends one entry to the activity log, with secret fields' values removed.
func (h *hooks) log(a activity) {
	if h.out == nil {
		return
	}
	a.Arguments = redactArguments(a.Arguments, h.secrets)
	b, err := json.Marshal(a)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.out.Write(append(b, '\n'))
}

func (h *hooks) close() {
	if h.closer != nil {
		h.closer.Close()
	}
}

// redactArguments returns args with the value of every member named in secrets (any
// depth, case-insensitively) replaced by redact.Mask, so that a hidden value reads the
// same here as in every other line toolshed prints. Arguments that are not JSON are
// dropped entirely rather than logged unredacted. (The names are the config's
// hooks.secret_fields and nothing else: internal/redact's rule for names is for what
// toolshed prints of URLs and upstream errors, and a tool's argument named key or
// token need not be a secret.)
func redactArguments(args json.RawMessage, secrets map[string]bool) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	if len(secrets) == 0 {
		return args
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return json.RawMessage(`"[not JSON]"`)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if secrets[strings.ToLower(k)] {
					x[k] = redact.Mask
				} else {
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return nil
	}
	return b
}

// rateLimits holds one token bucket per session: per key, which is the session, or,
// for a stateless HTTP POST's session, who sent it (its credential and profile; see
// clients.rateKey), since each of its requests is a session of its own.
type rateLimits struct {
	cfg config.RateLimit
	mu  sync.Mutex
	per map[any]*limiter
}

type limiter struct {
	*rate.Limiter
	used time.Time
}

func newRateLimits(cfg config.RateLimit) *rateLimits {
	return &rateLimits{cfg: cfg, per: map[any]*limiter{}}
}

// allow reports whether the session (or stateless client) key may make one more call
// now.
func (r *rateLimits) allow(ss any) bool {
	if r.cfg.CallsPerMinute <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	l, ok := r.per[ss]
	if !ok {
		burst := r.cfg.Burst
		if burst <= 0 {
			burst = r.cfg.CallsPerMinute
		}
		l = &limiter{Limiter: rate.NewLimiter(rate.Limit(float64(r.cfg.CallsPerMinute)/60), burst)}
		r.per[ss] = l
		// Forget sessions idle for a while, so the map does not grow with every client.
		for s, x := range r.per {
			if now.Sub(x.used) > 10*time.Minute && s != ss {
				delete(r.per, s)
			}
		}
	}
	l.used = now
	return l.AllowN(now, 1)
}

func (r *rateLimits) describe() string {
	return fmt.Sprintf("%d calls a minute", r.cfg.CallsPerMinute)
}
