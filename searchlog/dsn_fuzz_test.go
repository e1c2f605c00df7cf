package searchlog

import (
	"strings"
	"testing"
)

// FuzzParseDSN: reading any database name never panics, never takes a name holding a
// libpq keyword=value pair as a file's path, and a keyword=value string with a password,
// valid or not, is never quoted with its password in an error.
func FuzzParseDSN(f *testing.F) {
	f.Add("host=db dbname=log", "s3cret")
	f.Add("postgres://u@db/log?sslmode=disable", "p w'd")
	f.Add("file:/tmp/x.db?_pragma=busy_timeout(100)", "abc")
	f.Add("mylog host=db", "s3cret")
	f.Fuzz(func(t *testing.T, dsn, password string) {
		tg, err := parseDSN(dsn)
		if err == nil && tg.path != "" && keywordPair.MatchString(dsn) {
			t.Fatalf("parseDSN(%q) took a keyword=value string as the file %q", dsn, tg.path)
		}
		if len(password) < 4 || strings.ContainsAny(password, "'\\ \t\r\n\v\f\x00") || strings.Contains(dsn, password) {
			return
		}
		for _, in := range []string{dsn + " password=" + password, "password=" + password + " " + dsn} {
			if _, err := parseDSN(in); err != nil && strings.Contains(err.Error(), password) && !strings.Contains(strings.ReplaceAll(in, "password="+password, ""), password) {
				t.Fatalf("parseDSN(%q): %v shows the password", in, err)
			}
		}
	})
}
