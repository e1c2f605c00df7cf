// Package redact is the one rule by which toolshed hides secrets in what it prints:
// URLs and database names in start-up lines, warnings and errors, and the bodies of
// upstream errors, which may echo the key that was sent. Every such string goes through
// String before it reaches a log, so that a secret is hidden the same way wherever it
// shows, and a new place that prints a URL has one function to call.
//
// The rule hides values, never names, so that a message still says which URL or
// parameter is meant: a URL's password (scheme://user:PASSWORD@host), the value of any
// name=value pair whose name says it is a secret (URL query parameters, libpq key=value
// DSNs, prose), the value of such a JSON member, a bearer token, and strings shaped like
// API keys (sk-..., sk-ant-..., ghp_..., xoxb-..., AIza...), masked or not.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a hidden value. It is what Go's url.URL.Redacted writes for a password,
// so that every redacted URL reads the same.
const Mask = "xxxxx"

// secretWords are parameter-name words that hold a secret on their own: a name is split
// into words at every character that is not a letter or digit (api-key: api, key).
var secretWords = map[string]bool{
	"pass": true, "passwd": true, "password": true, "pwd": true, "passphrase": true,
	"key": true, "apikey": true, "token": true, "secret": true, "sig": true,
	"signature": true, "auth": true, "authorization": true, "credential": true,
	"credentials": true,
}

// secretParts are parts that make a name a secret's wherever they occur in it with its
// separators removed (sslpassword, client_secret, X-Api-Key). "token" counts only at the
// end (accessToken, x-auth-token), so that max_tokens and tokenizer are not secrets.
var secretParts = []string{"password", "passwd", "secret", "apikey", "accesskey", "privatekey", "signature", "credential"}

// SecretName reports whether a parameter, keyword or member called name holds a secret,
// case-insensitively: password, pass, pwd, key, api-key, api_key, apikey, token,
// access_token, secret, sig, signature, auth, names containing password, secret,
// apikey, signature or credential, and names ending in token. A percent-encoded name is read decoded, as a
// URL's reader decodes it.
func SecretName(name string) bool {
	n := name
	if d, err := url.QueryUnescape(n); err == nil {
		n = d
	}
	n = strings.ToLower(n)
	isSep := func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }
	for _, w := range strings.FieldsFunc(n, isSep) {
		if secretWords[w] {
			return true
		}
	}
	joined := strings.Join(strings.FieldsFunc(n, isSep), "")
	for _, p := range secretParts {
		if strings.Contains(joined, p) {
			return true
		}
	}
	return strings.HasSuffix(joined, "token")
}

var (
	// pairPattern is name=value after a start, a space or a separator of URL queries,
	// path parameters, lists and quotes. A value in single quotes is libpq's quoted value
	// (backslash escapes); an unquoted one runs to the next separator, so that a pair
	// after a ; or , is read as one (a=1;password=x). A secret's value is hidden further,
	// up to a space, & or # (see pairs).
	pairPattern = regexp.MustCompile(`(^|[\s?&;,(\[{"'<])([A-Za-z0-9_.%\-]+)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&#"'<>;,]*)`)
	// jsonPattern is a JSON member with a string value.
	jsonPattern = regexp.MustCompile(`("([^"\\]{1,100})"\s*:\s*)"(?:[^"\\]|\\.)*"`)
	// bearerPattern is a bearer credential as an Authorization header or a message
	// quotes it.
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer\s+)([A-Za-z0-9._~+/=\-*]+)`)
	// keyPattern is an API key by its shape, masked (sk-proj-****Xy9Z) or not: OpenAI's
	// and Anthropic's sk-, rk- and pk-, GitHub's ghp_ and friends, Slack's xox?-, and
	// Google's AIza.
	keyPattern = regexp.MustCompile(`\b(?:(?:sk|rk|pk)-[A-Za-z0-9_*.\-]{4,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abprs]-[A-Za-z0-9\-]{8,}|AIza[0-9A-Za-z_\-]{16,})`)
)

// String returns s with every secret the rule recognizes replaced by Mask (see the
// package comment). It works on any text, a URL or DSN alone or a message quoting one,
// parsable or not, and String(String(s)) == String(s).
func String(s string) string {
	s = userinfo(s)
	s = jsonPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := jsonPattern.FindStringSubmatch(m)
		if !SecretName(sub[2]) {
			return m
		}
		return sub[1] + `"` + Mask + `"`
	})
	s = pairs(s)
	s = bearerPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearerPattern.FindStringSubmatch(m)
		// A credential has a digit or punctuation; "bearer authentication" has none.
		if len(sub[2]) < 8 || !strings.ContainsAny(sub[2], "0123456789._~+/=-*") {
			return m
		}
		return sub[1] + Mask
	})
	return keyPattern.ReplaceAllStringFunc(s, func(m string) string {
		// A sentence's full stop after a key is the sentence's, not the key's.
		trimmed := strings.TrimRight(m, ".")
		return Mask + m[len(trimmed):]
	})
}

// pairs hides the values of secret name=value pairs in s. An unquoted secret value is
// hidden up to a space, &, # or quote, so that a password holding ; or , is hidden
// whole, and one that starts with a double quote or <> (which libpq takes as part of
// it) up to a space, & or #. One pass: matches a hidden value covers are skipped.
func pairs(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range pairPattern.FindAllStringSubmatchIndex(s, -1) {
		vStart, vEnd := m[8], m[9]
		if m[0] < last || !SecretName(s[m[4]:m[5]]) {
			continue
		}
		if vStart == vEnd || s[vStart] != '\'' {
			stop := " \t\r\n\v\f&#\"'<>"
			if vStart == vEnd {
				stop = " \t\r\n\v\f&#"
			}
			for vEnd < len(s) && !strings.ContainsRune(stop, rune(s[vEnd])) {
				vEnd++
			}
		}
		if vStart == vEnd {
			continue
		}
		b.WriteString(s[last:vStart])
		b.WriteString(Mask)
		last = vEnd
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Error is String of err's message, "" for nil.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return String(err.Error())
}

// userinfo hides the password of every scheme://user:password@host in s. The
// authority runs to the first /, ? or #, as in a URL's syntax, or to a space or quote
// where a message ends the URL; its user information is what precedes its last @.
func userinfo(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i + len("://")
		b.WriteString(s[:start])
		s = s[start:]
		end := strings.IndexAny(s, "/?#\"'<> \t\r\n")
		if end < 0 {
			end = len(s)
		}
		authority := s[:end]
		at := strings.LastIndexByte(authority, '@')
		colon := strings.IndexByte(authority, ':')
		if at < 0 || colon < 0 || colon > at || colon+1 == at {
			continue
		}
		b.WriteString(authority[:colon+1])
		b.WriteString(Mask)
		s = s[at:]
	}
}

// Wrap returns err with String applied to its message, and err still behind it for
// errors.Is and errors.As; nil for nil. It is for an error that quotes what it was given
// (a parser's quoting a connection string) and is passed on rather than printed here.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{msg: String(err.Error()), err: err}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
