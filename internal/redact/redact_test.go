package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain URL unchanged", "https://api.example.com/v1/embeddings?model=x", "https://api.example.com/v1/embeddings?model=x"},
		{"plain path unchanged", "/var/lib/toolshed/searchlog.db", "/var/lib/toolshed/searchlog.db"},
		{"userinfo password", "postgres://toolshed:s3cret@db:5432/log", "postgres://toolshed:xxxxx@db:5432/log"},
		{"userinfo password holding @", "postgres://u:p@ss@db/log", "postgres://u:xxxxx@db/log"},
		{"user without password kept", "postgres://toolshed@db/log", "postgres://toolshed@db/log"},
		{"query password", "postgres://u@db/log?sslmode=disable&password=s3cret", "postgres://u@db/log?sslmode=disable&password=xxxxx"},
		{"query password with a bad escape", "postgres://u@db/log?password=s3%ZZcret&x=1", "postgres://u@db/log?password=xxxxx&x=1"},
		{"query password after a semicolon", "postgres://u@db/log?a=1;password=s3cret", "postgres://u@db/log?a=1;password=xxxxx"},
		{"query PASSWORD upper case", "postgres://db/log?PASSWORD=s3cret", "postgres://db/log?PASSWORD=xxxxx"},
		{"query sslpassword", "postgres://db/log?sslpassword=s3cret", "postgres://db/log?sslpassword=xxxxx"},
		{"query name percent-encoded", "postgres://db/log?pass%77ord=s3cret", "postgres://db/log?pass%77ord=xxxxx"},
		{"api-key", "https://e.example.com/v1?api-key=abc123", "https://e.example.com/v1?api-key=xxxxx"},
		{"key", "https://g.example.com/v1/embed?key=abc123&alt=json", "https://g.example.com/v1/embed?key=xxxxx&alt=json"},
		{"api_key apikey token access_token", "http://h/?api_key=a&apikey=b&token=c&access_token=d", "http://h/?api_key=xxxxx&apikey=xxxxx&token=xxxxx&access_token=xxxxx"},
		{"sig signature secret auth pwd pass", "http://h/?sig=a&X-Amz-Signature=b&client_secret=c&auth=d&pwd=e&pass=f", "http://h/?sig=xxxxx&X-Amz-Signature=xxxxx&client_secret=xxxxx&auth=xxxxx&pwd=xxxxx&pass=xxxxx"},
		{"names that only look alike kept", "http://h/?monkey=a&keyword=b&author=c&passage=d&max_tokens=5", "http://h/?monkey=a&keyword=b&author=c&passage=d&max_tokens=5"},
		{"libpq DSN", "host=db port=5432 user=toolshed password=s3cret dbname=log", "host=db port=5432 user=toolshed password=xxxxx dbname=log"},
		{"libpq DSN quoted password", `host=db password='a b\' c' dbname=log`, "host=db password=xxxxx dbname=log"},
		{"libpq DSN password starting with a double quote", `password="0000 host=db`, "password=xxxxx host=db"},
		{"libpq DSN spaces around =", "host=db password = s3cret dbname=log", "host=db password = xxxxx dbname=log"},
		{"in a message, quoted", `search log: cannot write to "postgres://u@db/log?password=s3cret": refused`, `search log: cannot write to "postgres://u@db/log?password=xxxxx": refused`},
		{"url.Error", `Post "https://u:pw@h/v1?key=abc": dial tcp: refused`, `Post "https://u:xxxxx@h/v1?key=xxxxx": dial tcp: refused`},
		{"OpenAI 401, masked key", "Incorrect API key provided: sk-proj-****Xy9Z. You can find your API key at https://platform.openai.com/account/api-keys.", "Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"Anthropic key", "invalid x-api-key sk-ant-api03-abcdefghijkl", "invalid x-api-key xxxxx"},
		{"bearer", "Authorization: Bearer abc.def-123 rejected", "Authorization: Bearer xxxxx rejected"},
		{"bearer JWT", "bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "bearer xxxxx"},
		{"bearer in prose kept", "the server wants bearer authentication", "the server wants bearer authentication"},
		{"GitHub token", "token ghp_abcdefghijklmnopqrstuvwxyz0123 is revoked", "token xxxxx is revoked"},
		{"JSON member", `{"api_key": "abc123", "model": "m"}`, `{"api_key": "xxxxx", "model": "m"}`},
		{"JSON member escaped quote", `{"token":"a\"b"}`, `{"token":"xxxxx"}`},
		{"words around sk kept", "task-force risk-free", "task-force risk-free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if got := String(tc.want); got != tc.want {
				t.Errorf("String is not idempotent: String(%q) = %q", tc.want, got)
			}
		})
	}
}

func TestError(t *testing.T) {
	if Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
	if got := Error(errors.New("dial postgres://u:pw@h/db")); got != "dial postgres://u:xxxxx@h/db" {
		t.Errorf("Error = %q", got)
	}
}

func TestWrap(t *testing.T) {
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	base := errors.New("cannot parse `postgres://h/db?a=1;password=s3cret`")
	err := Wrap(base)
	if strings.Contains(err.Error(), "s3cret") || !errors.Is(err, base) {
		t.Errorf("Wrap = %q (errors.Is %v); want the password hidden and the error still behind it", err, errors.Is(err, base))
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"password": true, "Password": true, "sslpassword": true, "pass": true, "pwd": true,
		"key": true, "api-key": true, "api_key": true, "apikey": true, "apiKey": true, "X-Api-Key": true,
		"token": true, "access_token": true, "accessToken": true, "secret": true, "client_secret": true,
		"sig": true, "signature": true, "X-Goog-Signature": true, "auth": true, "authorization": true,
		"pass%77ord": true,
		"host":       false, "user": false, "dbname": false, "sslmode": false, "model": false, "monkey": false,
		"keyword": false, "author": false, "passage": false, "": false,
		"max_tokens": false, "tokenizer": false, "x-auth-token": true, "githubToken": true,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzString checks, for any text, that String neither panics nor changes what it
// already redacted, and, for a password and a secret parameter of any content put
// where a URL or a libpq DSN holds them, that neither comes out.
func FuzzString(f *testing.F) {
	f.Add("postgres://u:p@h/db?password=x", "s3cret", "other")
	f.Add("host=db password='a b'", "p@ss/w:rd?&=#", "sk-abc")
	f.Add(`{"token":"a\"b"}`, "a\\'b", " ")
	f.Fuzz(func(t *testing.T, text, password, value string) {
		once := String(text)
		if twice := String(once); twice != once {
			t.Fatalf("String(%q) = %q, but String of that is %q", text, once, twice)
		}
		if !utf8.ValidString(text) || len(password) < 3 || len(value) < 3 || strings.Contains(value, "\x00") {
			return
		}
		for _, secret := range []string{password, value} {
			if strings.Contains("postgres://u:@h/db?sslmode=disable&password= host=db port=5432 dbname=log sk- xxxxx", secret) {
				return // the secret is part of the text around it
			}
		}
		u := url.URL{Scheme: "postgres", User: url.UserPassword("u", password), Host: "h:5432", Path: "/db",
			RawQuery: "sslmode=disable&password=" + url.QueryEscape(value)}
		quoted := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'"
		for _, in := range []string{
			u.String(),
			"search log: cannot write to " + u.String() + ": refused",
			"host=db port=5432 password=" + quoted + " dbname=log",
		} {
			out := String(in)
			if strings.Contains(in, url.QueryEscape(value)) && strings.Contains(out, "password="+url.QueryEscape(value)) {
				t.Fatalf("String(%q) = %q shows the password parameter", in, out)
			}
			if strings.Contains(out, ":"+url.UserPassword("u", password).String()[2:]+"@") {
				t.Fatalf("String(%q) = %q shows the URL's password", in, out)
			}
			if strings.Contains(out, "password="+quoted) {
				t.Fatalf("String(%q) = %q shows the DSN's password", in, out)
			}
		}
	})
}

// BenchmarkString measures the rule on a typical error and on 64 KiB inputs built to
// make it slow (a chain of pairs, of URLs with user information, of unclosed quotes):
// an upstream's error body is that large at most, and goes through the rule before the
// log. Each must stay linear: go test -bench String ./internal/redact.
func BenchmarkString(b *testing.B) {
	for _, in := range []struct{ name, text string }{
		{"error", `Post "https://u:pw@h/v1/embeddings?key=abc": dial tcp 10.0.0.1:443: connect: connection refused`},
		{"pairs", strings.Repeat("a=b;", 16<<10)},
		{"userinfo", strings.Repeat("://a:b@", 9362)},
		{"quotes", strings.Repeat(`password="`, 6553)},
		{"json", strings.Repeat(`{"token":"a\"`, 5041)},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				String(in.text)
			}
		})
	}
}
