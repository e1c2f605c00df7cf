package searchlog

import (
	"errors"
	"path/filepath"
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
