package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// serveUpstream is the upstream MCP server of the benchmark: one tool, echo, answered
// over newline-delimited JSON-RPC on r and w with as little work as a server can do, so
// that the figures are the gateways' own.
func serveUpstream(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(w)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue // notifications and responses
		}
		switch msg.Method {
		case "initialize":
			version := msg.Params.ProtocolVersion
			if version == "" {
				version = "2025-11-25"
			}
			reply(msg.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"bench-upstream","version":"1"}}`, version))
		case "tools/list":
			reply(msg.ID, `{"tools":[{"name":"echo","description":"Returns its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`)
		case "tools/call":
			text, _ := json.Marshal(msg.Params.Arguments.Text)
			reply(msg.ID, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
		case "ping":
			reply(msg.ID, `{}`)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
			out.Flush()
		}
	}
}
