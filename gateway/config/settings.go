package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/policy"
)

// matchNothing is a valid glob that matches no qualified tool name (those hold only
// letters, digits, '-' and '_'): an allow list whose patterns were all unusable becomes
// it, so a typo denies calls rather than allowing every tool.
const matchNothing = "!"

// validProfileName reports whether a profile name can stand in a URL path segment
// (/mcp/{profile}) without escaping.
func validProfileName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// profiles reads profiles: {name: {servers: [globs], tools: [globs], token: "..."}}.
// A profile with any problem is left out entirely rather than loaded with part of its
// scope, since a scope missing a pattern could grant more than was meant.
func (l *loader) profiles(n *yaml.Node) map[string]Profile {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.warn("profiles", "is %s, not a mapping from profile name to {servers, tools, token}; ignored", kindName(n))
		return nil
	}
	out := map[string]Profile{}
	tokens := map[string]string{} // token -> profile
	for _, p := range l.pairs(n, "profiles") {
		key := join("profiles", p.key)
		prof, problem := l.profile(p.key, p.val, key)
		if problem != "" {
			l.warn(key, "%s. Profile %q is left out", problem, p.key)
			continue
		}
		if prof.Token != "" {
			if other, dup := tokens[prof.Token]; dup {
				l.warn(key+".token", "is the same as the token of profile %q, so a request bearing it could not say which profile it means; give each profile its own token. Profile %q is left out", other, p.key)
				continue
			}
			tokens[prof.Token] = p.key
		}
		out[p.key] = prof
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// profile reads one profile; it returns what is wrong, or "".
func (l *loader) profile(name string, n *yaml.Node, key string) (Profile, string) {
	var prof Profile
	if !validProfileName(name) {
		return prof, fmt.Sprintf("the name %q can hold only letters, digits, '-' and '_', as it is used in the URL path /mcp/%s; rename it", name, name)
	}
	if isNull(n) {
		return prof, "" // every tool, no token
	}
	if n.Kind != yaml.MappingNode {
		return prof, fmt.Sprintf("is %s, not a mapping such as {servers: [\"github\"], tools: [\"slack__*\"], token: \"${TOKEN}\"}", kindName(n))
	}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		switch p.key {
		case "servers", "tools":
			list, ok := stringList(p.val)
			if !ok {
				return prof, fmt.Sprintf("%s is %s, not a glob or a list of globs such as [\"github\", \"slack*\"]", p.key, kindName(p.val))
			}
			if p.key == "servers" {
				prof.Scope.Servers = list
			} else {
				prof.Scope.Tools = list
			}
		case "token":
			t, ok := str(p.val)
			if !ok {
				return prof, fmt.Sprintf("token is %s, not a string; write token: \"${TOOLSHED_TOKEN}\"", kindName(p.val))
			}
			prof.Token = l.expand(t, k)
		case "claims":
			c, problem := claims(p.val)
			if problem != "" {
				return prof, problem
			}
			prof.Claims = c
		default:
			l.warn(k, "unknown setting, ignored; a profile takes servers, tools, token and claims")
		}
	}
	if err := prof.Scope.Check(); err != nil {
		return prof, fmt.Sprintf("%v", err)
	}
	return prof, ""
}

// hooks reads hooks; see Hooks. A malformed glob is dropped with a Warning that says
// what dropping it means for that list.
func (l *loader) hooks(n *yaml.Node) Hooks {
	var h Hooks
	if isNull(n) {
		return h
	}
	if n.Kind != yaml.MappingNode {
		l.warn("hooks", "is %s, not a mapping with allow, deny, approve, approve_destructive, secret_fields and activity_log; ignored", kindName(n))
		return h
	}
	consequence := map[string]string{
		"allow":   "the tools it names may not be called",
		"deny":    "the tools it names are NOT denied",
		"approve": "the tools it names do NOT ask for approval",
	}
	for _, p := range l.pairs(n, "hooks") {
		k := join("hooks", p.key)
		switch p.key {
		case "allow", "deny", "approve":
			list, ok := stringList(p.val)
			if !ok {
				l.warn(k, "is %s, not a glob or a list of globs such as [\"github__*\"]; %s; fix it", kindName(p.val), map[string]string{
					"allow": "so that no tool is let through by mistake, no tool may be called", "deny": "ignored, so no tool is denied", "approve": "ignored, so no tool asks for approval",
				}[p.key])
				if p.key == "allow" {
					h.Allow = []string{matchNothing}
				}
				continue
			}
			var good []string
			for i, g := range list {
				if err := (policy.Scope{Tools: []string{g}}).Check(); err != nil {
					l.warn(fmt.Sprintf("%s[%d]", k, i), "%q is not a valid glob (use *, ? and [a-z]); it is ignored, so %s: fix it", g, consequence[p.key])
					continue
				}
				good = append(good, g)
			}
			if p.key == "allow" && len(list) > 0 && len(good) == 0 {
				// An allow list that lost every pattern must not turn into "allow all".
				l.warn(k, "has no valid pattern left, so no tool may be called until it is fixed")
				good = []string{matchNothing}
			}
			switch p.key {
			case "allow":
				h.Allow = good
			case "deny":
				h.Deny = good
			default:
				h.Approve = good
			}
		case "approve_destructive":
			h.ApproveDestructive = l.boolean(p.val, k, false)
		case "secret_fields":
			list, ok := stringList(p.val)
			if !ok {
				l.warn(k, "is %s, not a list of argument names such as [\"password\", \"api_key\"]; ignored, so no field is hidden from the activity log", kindName(p.val))
				continue
			}
			for i, f := range list {
				if f == "" {
					l.warn(fmt.Sprintf("%s[%d]", k, i), "is empty; skipped")
					continue
				}
				h.SecretFields = append(h.SecretFields, f)
			}
		case "activity_log":
			s, ok := str(p.val)
			if !ok {
				l.warn(k, "is %s, not a file path (or \"-\" for stderr); no activity log is written", kindName(p.val))
				continue
			}
			h.ActivityLog = l.expand(s, k)
		default:
			l.warn(k, "unknown setting, ignored; hooks takes allow, deny, approve, approve_destructive, secret_fields and activity_log")
		}
	}
	return h
}

// rateLimit reads rate_limit: {calls_per_minute: N, burst: N}.
func (l *loader) rateLimit(n *yaml.Node) RateLimit {
	var r RateLimit
	if isNull(n) {
		return r
	}
	if n.Kind != yaml.MappingNode {
		l.warn("rate_limit", "is %s, not a mapping such as {calls_per_minute: 60, burst: 10}; no rate limit applies", kindName(n))
		return r
	}
	for _, p := range l.pairs(n, "rate_limit") {
		k := join("rate_limit", p.key)
		switch p.key {
		case "calls_per_minute", "burst":
			i, ok := intOf(p.val)
			if !ok || i < 0 {
				l.warn(k, "%s is not a whole number of 0 or more; using 0 (%s)", describe(p.val), map[string]string{
					"calls_per_minute": "no rate limit", "burst": "a burst of calls_per_minute",
				}[p.key])
				i = 0
			}
			if p.key == "burst" {
				r.Burst = i
			} else {
				r.CallsPerMinute = i
			}
		default:
			l.warn(k, "unknown setting, ignored; rate_limit takes calls_per_minute and burst")
		}
	}
	if r.Burst > 0 && r.CallsPerMinute == 0 {
		l.warn("rate_limit.burst", "has no effect without calls_per_minute, so no rate limit applies; set calls_per_minute too")
		r.Burst = 0
	}
	return r
}
