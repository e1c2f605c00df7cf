//go:build e2e

package release

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// testVersion is the version the tests stamp, as a release would with -ldflags -X.
const testVersion = "9.8.7-release-test"

// runIn runs a command in dir with env, its output into the test's log on failure.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) error {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// checkStatic fails unless path is an ELF executable with no program interpreter and no
// dynamic section: one that starts on an empty base image, with no libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			t.Errorf("%s has a program interpreter (PT_INTERP): it is linked dynamically", path)
		case elf.PT_DYNAMIC:
			t.Errorf("%s has a dynamic segment (PT_DYNAMIC)", path)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s has a .dynamic section", path)
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", path, libs)
	}
}

// waitHTTP polls GET url until it answers 200 or the process ends (done closes) or a
// minute passes.
func waitHTTP(t *testing.T, url string, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("the server exited before %s answered", url)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within a minute", url)
}

// checkServes checks a toolshed serve --http at addr the way a deployment's probes and a
// client would: /healthz and /readyz answer 200, an MCP client connects and sees the
// stamped version, and tool_search answers.
func checkServes(t *testing.T, addr string, done <-chan struct{}) {
	t.Helper()
	base := "http://" + addr
	waitHTTP(t, base+"/healthz", done)
	waitHTTP(t, base+"/readyz", done)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var health struct{ Status string }
	if err := json.Unmarshal(body, &health); err != nil || health.Status != "ok" {
		t.Fatalf("/healthz answered %q, want {\"status\":\"ok\"}", body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "release-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connecting to %s/mcp: %v", base, err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Version; got != testVersion {
		t.Errorf("serverInfo.version = %q, want the stamped %q (-ldflags -X github.com/toolshed/toolshed/gateway.Version)", got, testVersion)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "create an issue on github"}})
	if err != nil {
		t.Fatalf("tool_search: %v", err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("tool_search answered an error or nothing: %+v", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "github") {
		t.Errorf("tool_search for a github issue found no github tool: %s", text)
	}
}

// TestStaticBinary runs the Dockerfile's build stage on this machine (its go build line
// as written) and checks that the binary is static and serves: the binary the image
// ships, tested without an image.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := t.TempDir()
	buildStage(t, out, testVersion)
	bin := filepath.Join(out, "rootfs/usr/local/bin/toolshed")
	checkStatic(t, bin)
	// toolshed version says the version it reports to clients (checkServes).
	if v, err := exec.Command(bin, "version").Output(); err != nil || !strings.HasPrefix(string(v), "toolshed "+testVersion+"\n") {
		t.Errorf("toolshed version: %v\n%s\nwant the stamped %s first", err, v, testVersion)
	}

	addr := testupstream.FreeAddr(t)
	cmd := exec.Command(bin, "serve", "--http", addr)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "TOOLSHED_CONFIG=")
	// Start stops it at the end of the test and logs its stderr if the test failed; it
	// has failed the test already if toolshed exited before it was up.
	testupstream.Start(t, cmd, testupstream.ServersReady)
	checkServes(t, addr, nil)
}

// testWriter logs what a child process writes, so a failure shows its stderr.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
