package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// The client role of the MCP conformance suite for MCP 2026-07-28 (0.2.0-alpha.12,
// --requirements 2026-07-28), with toolshed as the client under test: for each
// scenario, testdata/conformance-client.sh starts toolshed serve --http with the
// suite's test server as its HTTP upstream, and the go-sdk's everything-client drives
// toolshed, so the suite judges what toolshed sends upstream (the envelope, Mcp-Method
// and Mcp-Name, Mcp-Param-* headers, MRTR retries with requestState). Scenarios that
// cannot pass are in testdata/conformance-client-baseline.yml, each with its reason;
// anything else that fails, or a baseline entry that passes, fails the test.
func TestServeConformanceClient(t *testing.T) {
	bin := toolshedBinary(t)
	client := testupstream.ConformanceClient(t)
	wrapper, _ := filepath.Abs("testdata/conformance-client.sh")
	baseline, _ := filepath.Abs("testdata/conformance-client-baseline.yml")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command := "env TOOLSHED=" + bin + " CLIENT=" + client + " " + wrapper
	out, code, err := testupstream.ConformanceClientSuite(t, ctx, command, "--requirements", "2026-07-28", "--expected-failures", baseline)
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := testupstream.ParseConformance(out)
	t.Logf("conformance client role through toolshed: passed %v, failed %v", passed, failed)
	if code != 0 || len(passed) < 6 {
		t.Errorf("conformance client suite exited %d with %d scenarios passed, failed %v:\n%s", code, len(passed), failed, out)
	}
}
