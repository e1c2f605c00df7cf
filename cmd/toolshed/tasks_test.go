package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// A client of MCP 2026-07-28 on `toolshed serve`'s stdio, declaring the Tasks
// extension in each request's envelope, gets a task handle from a server that answers
// with one (toolshed's id, not the server's) and follows the task through toolshed
// with tasks/get until it completes; tasks/get was "method not found" before.
func TestServeStdioTasks(t *testing.T) {
	cmd, args := testupstream.TS2TaskStdio(t, nil)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tasks": map[string]any{"command": cmd, "args": args}}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPiped(t, "--config", cfg, "--tool-search", "off", "--db", "off")
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"pipe","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasks__job","arguments":{"ms":200},` + meta + `}}`)
	m := p.answer("1")
	var handle struct{ ResultType, TaskID, Status string }
	if m.Error != nil || json.Unmarshal(m.Result, &handle) != nil || handle.ResultType != "task" || !strings.HasPrefix(handle.TaskID, "toolshed-task-") {
		t.Fatalf("tools/call tasks__job = %s %s, want a task handle with toolshed's id", m.Result, errText(m))
	}
	deadline := time.Now().Add(time.Minute)
	for i := 2; ; i++ {
		id := strconv.Itoa(i)
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/get","params":{"taskId":"` + handle.TaskID + `",` + meta + `}}`)
		m := p.answer(id)
		var st struct {
			TaskID, Status string
			Result         json.RawMessage
		}
		if m.Error != nil || json.Unmarshal(m.Result, &st) != nil || st.TaskID != handle.TaskID {
			t.Fatalf("tasks/get = %s %s, want the task under toolshed's id", m.Result, errText(m))
		}
		if st.Status == "completed" {
			if !strings.Contains(string(st.Result), "job done after 200 ms") {
				t.Errorf("the completed task's result is %s", st.Result)
			}
			break
		}
		if st.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("tasks/get %d: status %q, want working until completed (within a minute)", i, st.Status)
		}
	}
}
