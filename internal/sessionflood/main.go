// Command sessionflood measures what a client that opens sessions and never ends them
// costs a running `toolshed serve --http`: it sends N initialize requests without
// DELETE and reports the answers and the server's resident memory (VmRSS and its peak
// VmHWM, from /proc/PID/status, so Linux only) as it goes.
//
//	toolshed serve --http 127.0.0.1:8931 &
//	go run ./internal/sessionflood -url http://127.0.0.1:8931/mcp -pid $! -n 30000
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sessionflood","version":"1"}}}`

func main() {
	url := flag.String("url", "http://127.0.0.1:8931/mcp", "the MCP endpoint")
	pid := flag.Int("pid", 0, "the server's process id, whose memory is reported")
	n := flag.Int("n", 30000, "initialize requests to send")
	every := flag.Int("every", 5000, "report every `N` requests")
	token := flag.String("token", "", "bearer token to send")
	flag.Parse()

	client := &http.Client{Timeout: 30 * time.Second}
	status := map[int]int{}
	var firstRefusal string
	fmt.Printf("before: %s\n", memory(*pid))
	start := time.Now()
	for i := 1; i <= *n; i++ {
		req, _ := http.NewRequest(http.MethodPost, *url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sessionflood:", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status[resp.StatusCode]++
		if resp.StatusCode != http.StatusOK && firstRefusal == "" {
			firstRefusal = fmt.Sprintf("request %d: %d Retry-After=%q %s", i, resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(string(body)))
		}
		if i%*every == 0 || i == *n {
			fmt.Printf("after %6d: %s  answers %v  (%.0fs)\n", i, memory(*pid), status, time.Since(start).Seconds())
		}
	}
	if firstRefusal != "" {
		fmt.Println("first refusal:", firstRefusal)
	}
}

// memory reports a process's VmRSS and VmHWM.
func memory(pid int) string {
	if pid == 0 {
		return "(no -pid)"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var rss, hwm string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("RSS %s (peak %s)", rss, hwm)
}
