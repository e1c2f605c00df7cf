package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestWriteVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8"}, "toolshed 1.2.3\ngo1.26.8 " + platform + "\n"},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("vcs", "git", "vcs.revision", "8606f0a1b2c3d4e5f60718293a4b5c6d7e8f9012", "vcs.time", "2026-12-06T19:40:00Z", "vcs.modified", "false")},
			"toolshed 1.2.3\ngo1.26.8 " + platform + "\nrevision 8606f0a1b2c3d4e5f60718293a4b5c6d7e8f9012, committed 2026-12-06T19:40:00Z\n"},
		{"checkout, modified", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("vcs.revision", "8606f0a", "vcs.modified", "true")},
			"toolshed 1.2.3\ngo1.26.8 " + platform + "\nrevision 8606f0a, with uncommitted changes\n"},
		{"no build info", nil, "toolshed 1.2.3\n" + runtime.Version() + " " + platform + "\n"},
	} {
		var b bytes.Buffer
		writeVersion(&b, "1.2.3", tc.bi)
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}

// TestVersionCommand runs the binary as a user would: toolshed version, --version and
// -version print the same, what the binary's build info records (Go version, revision
// when there is one), and the version is the one serve reports to an MCP client.
func TestVersionCommand(t *testing.T) {
	bin := toolshedBinary(t)
	code, out, stderr := runBinary(t, bin, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("toolshed version: exit %d, stderr %s", code, stderr)
	}
	for _, flag := range []string{"--version", "-version"} {
		if code, same, _ := runBinary(t, bin, flag); code != 0 || same != out {
			t.Errorf("toolshed %s: exit %d, printed %q; toolshed version printed %q", flag, code, same, out)
		}
	}
	if code, _, stderr := runBinary(t, bin, "version", "now"); code != 2 || !strings.Contains(stderr, `unexpected arguments ["now"]`) {
		t.Errorf("toolshed version now: exit %d, stderr %s", code, stderr)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	version, ok := strings.CutPrefix(lines[0], "toolshed ")
	if !ok || version == "" || strings.HasPrefix(version, "v") {
		t.Fatalf("first line %q, want toolshed VERSION (no leading v)", lines[0])
	}
	if want := bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH; len(lines) < 2 || lines[1] != want {
		t.Errorf("output %q, want %q second", out, want)
	}
	revision := ""
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	switch {
	case revision == "" && len(lines) != 2:
		t.Errorf("output %q has more than the version and Go's, with no revision in the build info", out)
	case revision != "" && (len(lines) != 3 || !strings.HasPrefix(lines[2], "revision "+revision)):
		t.Errorf("output %q, want the revision %s third", out, revision)
	}

	url := startServe(t, bin, "--catalog", "testdata/small.json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "version-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Version; got != version {
		t.Errorf("serve reports version %q to clients, toolshed version says %q", got, version)
	}
}
