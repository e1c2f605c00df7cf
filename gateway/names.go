package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/toolshed/toolshed/catalog"
)

// MinNameLen is the smallest Options.MaxNameLen: a shortened name needs room for its
// hash and a few characters of the name it stands for.
const MinNameLen = 16

// shortenNames cuts every listed name longer than limit (0: no limit) so that clients
// with a short name budget list each tool under a name of its own. Gemini CLI, for one,
// calls a tool of server S "mcp_S_" + name and cuts longer names than 63 characters to
// their first and last 30, so two long names that differ only in the middle become one,
// and one of the tools is lost. A shortened name keeps the start of the server part and
// the whole tool name where they fit, with a hash of the qualified name between them
// ("knowledge-graph-memo-1a2b3c4d__create_entities"), so it is deterministic, stable
// across restarts and unique; calls through it reach the tool it stands for, because
// the gateway routes each listed name to its qualified name.
func shortenNames(names map[*catalog.Tool]string, reserved []string, limit int) {
	if limit <= 0 {
		return
	}
	taken := make(map[string]bool, len(names)+len(reserved))
	for _, n := range reserved {
		taken[n] = true
	}
	var long []*catalog.Tool
	for t, n := range names {
		if len(n) > limit {
			long = append(long, t)
		} else {
			taken[n] = true
		}
	}
	// In the order of qualified names, so that the rare second try on a collision is
	// deterministic too.
	slices.SortFunc(long, func(a, b *catalog.Tool) int { return strings.Compare(a.Qualified, b.Qualified) })
	for _, t := range long {
		short := shortName(names[t], t.Qualified, limit, 8)
		if taken[short] {
			short = shortName(names[t], t.Qualified, limit, 16)
		}
		taken[short] = true
		names[t] = short
	}
}

// shortName is name cut to limit with hashLen hex digits of the hash of qualified.
func shortName(name, qualified string, limit, hashLen int) string {
	sum := sha256.Sum256([]byte(qualified))
	h := "-" + hex.EncodeToString(sum[:])[:hashLen]
	if server, tool, ok := strings.Cut(name, catalog.Separator); ok {
		if room := limit - len(h) - len(catalog.Separator) - len(tool); room >= 1 {
			return server[:min(room, len(server))] + h + catalog.Separator + tool
		}
	}
	return name[:max(limit-len(h), 0)] + h
}
