package stats

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteHTMLRecorded(t *testing.T) {
	r := recordedReport(t, testCatalog(t))
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("STATS_HTML_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "report.html"), b.Bytes(), 0o644)
	}
}
