package testupstream_test

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

const initialize2025 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// The TypeScript SDK v2 servers start in the era asked for: a modern-only one refuses
// a 2025 initialize with -32022 naming 2026-07-28, a both-eras one takes it.
func TestTS2Servers(t *testing.T) {
	for legacy, want := range map[string]string{
		"reject": `"code":-32022`,
		"serve":  `"protocolVersion":"2025-11-25"`,
	} {
		command, args := testupstream.TS2Stdio(t, legacy, nil)
		cmd := exec.CommandContext(ctxFor(t), command, args...)
		cmd.Stdin = strings.NewReader(initialize2025 + "\n")
		testupstream.Own(t, cmd)
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(want)) || (legacy == "reject" && !bytes.Contains(out, []byte(`"supported":["2026-07-28"]`))) {
			t.Errorf("stdio %s answered initialize with %s (%v), want %s", legacy, out, err, want)
		}
	}
	url := testupstream.TS2HTTP(t, "reject", nil)
	req := testupstream.Request(t, "POST", url, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, strings.NewReader(initialize2025))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(`"code":-32022`)) {
		t.Errorf("HTTP reject answered initialize with %d %s, want 400 and -32022", resp.StatusCode, body)
	}
}
