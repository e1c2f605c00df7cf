package searchlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFile: the file a database name names, as Open reads the name; none for PostgreSQL.
func TestFile(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	for _, tc := range []struct {
		dsn, path string
		isFile    bool
	}{
		{"", filepath.Join(data, "toolshed", "searchlog.db"), true},
		{"/var/log/ts.db", "/var/log/ts.db", true},
		{"rel/ts.db", "rel/ts.db", true},
		{"sqlite:/var/log/ts.db", "/var/log/ts.db", true},
		{"file:/var/log/ts.db?_pragma=busy_timeout(100)", "/var/log/ts.db", true},
		{"file:///var/log/ts.db", "/var/log/ts.db", true},
		{"postgres://u:secret@db/toolshed", "", false},
		{"postgresql://db/toolshed", "", false},
		// libpq keyword=value strings are PostgreSQL's, never a file named after them.
		{"host=db port=5432 user=toolshed password=s3cret dbname=log", "", false},
		{"dbname=log", "", false},
		{"  host = db  password='a b' ", "", false},
		{"./a=b.db", "./a=b.db", true},
		{"my host.db", "my host.db", true},
	} {
		path, isFile, err := File(tc.dsn)
		if err != nil || path != tc.path || isFile != tc.isFile {
			t.Errorf("File(%q) = %q, %v, %v; want %q, %v", tc.dsn, path, isFile, err, tc.path, tc.isFile)
		}
	}
	for _, dsn := range []string{"sqlite:", "file::memory:", "mysql://db/x"} {
		if _, _, err := File(dsn); !errors.Is(err, ErrBadDSN) {
			t.Errorf("File(%q): err %v, want ErrBadDSN", dsn, err)
		}
	}
}

// TestOpenRefusesBrokenKeywordDSN: a name that holds a libpq keyword=value pair but is
// not a valid keyword=value string is refused with an error that says how to write one
// and does not show the password, and no file is created (its name would hold the
// password).
func TestOpenRefusesBrokenKeywordDSN(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const secret = "s3cret-pw"
	for _, dsn := range []string{
		"host=db password=" + secret + " dbname",
		"mylog host=db password=" + secret,
		"host=db password='" + secret,
	} {
		_, err := Open(context.Background(), dsn, Options{})
		if !errors.Is(err, ErrBadDSN) || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "keyword=value") {
			t.Errorf("Open(%q): err %v; want ErrBadDSN saying how to write a keyword=value string, without the password", dsn, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("Open created %s in the working directory", entries[0].Name())
	}
}
