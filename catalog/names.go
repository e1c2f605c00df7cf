package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// validNameByte reports whether c may appear in a name clients accept.
func validNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// maxServerLen leaves room in a qualified name for the separator and a tool name.
const maxServerLen = MaxNameLen - len(Separator) - 1

// ServerName turns the name a user or a file gave a server into the prefix of its tools'
// qualified names. Characters clients reject become '-' ("My Server" is "My-Server") and
// an over-long name is cut. An empty name, or one containing the separator "__" (which
// would make qualified names ambiguous), is an error wrapping ErrServerName.
func ServerName(name string) (string, error) {
	switch {
	case strings.TrimSpace(name) == "":
		return "", fmt.Errorf("%w: the name is empty; give the server a name of letters, digits, '-' or '_'", ErrServerName)
	case strings.Contains(name, Separator):
		return "", fmt.Errorf("%w: %q contains %q, which separates server from tool in qualified names; rename it with a single '_' or '-'", ErrServerName, name, Separator)
	}
	return ServerNameFrom(name), nil
}

// ServerNameFrom turns free text (a file name, a config key) into a valid server name:
// invalid characters become '-', runs of '_' collapse to one, and the result is cut to fit.
// It returns "server" for text with nothing usable in it.
func ServerNameFrom(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < maxServerLen; i++ {
		c := s[i]
		if !validNameByte(c) {
			c = '-'
		}
		if c == '_' && len(b) > 0 && b[len(b)-1] == '_' {
			continue
		}
		b = append(b, c)
	}
	out := strings.Trim(string(b), "-_")
	if out == "" {
		return "server"
	}
	return out
}

// Qualify returns the qualified name of tool on server: server + "__" + tool, where every
// character a client would reject becomes '_'. A name longer than MaxNameLen keeps its
// start and ends in a short hash of the original pair, so it stays unique and stable.
func Qualify(server, tool string) string {
	q, _ := qualify(server, tool)
	return q
}

// qualify is Qualify that also reports whether the tool name had to change.
func qualify(server, tool string) (string, bool) {
	changed := false
	var b strings.Builder
	b.Grow(len(server) + len(Separator) + len(tool))
	b.WriteString(server)
	b.WriteString(Separator)
	for _, r := range tool {
		if r < 0x80 && validNameByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
			changed = true
		}
	}
	q := b.String()
	if len(q) <= MaxNameLen {
		return q, changed
	}
	return withHash(q, server, tool), true
}

// withHash makes q unique to (server, tool) by ending it in a short hash of the pair,
// cutting q so the result fits MaxNameLen.
func withHash(q, server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return q[:min(len(q), MaxNameLen-len(suffix))] + suffix
}
