package gateway_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// Overrides on the real everything server: a keyword makes a tool findable by a word its
// server never uses; a search-only description is searched but never shown; show: true
// changes what tool_describe and tools/list give the model; a hidden tool is neither
// found, described nor called.
func TestOverridesOnRealServer(t *testing.T) {
	const (
		shown      = "Repeats a message back verbatim; use it to check that the connection works."
		searchOnly = "Lists hyperlinks to sample resources of every kind."
	)
	cfg, warns, err := config.Parse([]byte(`
overrides:
  - tools: everything__get-sum
    keywords: [abacus, arithmetic]
  - tools: ["everything__get-env"]
    hide: true
  - tools: everything__echo
    description: "`+shown+`"
    show: true
  - tools: everything__get-resource-links
    description: "`+searchOnly+`"
  - tools: nothing__matches*
    keywords: [never]
  - servers: everything
    tools: everything__get-tiny-image
    title: Thumbnail
`), "overrides.yaml")
	if err != nil || len(warns) > 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	ecmd, eargs := testupstream.Everything(t)
	// echo and get-tiny-image are listed directly too, to see tools/list.
	cfg.Servers = []config.Server{{Name: "everything", Type: config.Stdio, Command: ecmd, Args: eargs,
		Rules: policy.ServerRules{Configs: map[string]policy.ToolConfig{"echo": {DeferLoading: ptr(false)}, "get-tiny-image": {DeferLoading: ptr(false)}}}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On})
	if st := status(h, "everything"); st.State != gateway.Ready {
		t.Fatalf("everything: %+v", st)
	}
	original := serverTools(t, ecmd, eargs)
	cs := h.client("", nil)

	search := func(query string) string {
		t.Helper()
		return resultText(call(t, cs, "tool_search", map[string]any{"query": query, "limit": 10}))
	}
	if got := search("abacus"); !strings.Contains(got, "everything__get-sum") {
		t.Errorf("a keyword did not make get-sum findable: %s", got)
	}
	if got := search("hyperlinks"); !strings.Contains(got, "everything__get-resource-links") {
		t.Errorf("a search-only description is not searched: %s", got)
	}
	if got := search("environment variables"); strings.Contains(got, "get-env") {
		t.Errorf("a hidden tool is found by search: %s", got)
	}
	for _, bridged := range []string{"tool_call", "tool_describe"} {
		res := call(t, cs, bridged, map[string]any{"name": "everything__get-env", "arguments": map[string]any{}})
		if !res.IsError || !strings.Contains(resultText(res), "hidden by this gateway's configuration") || errorCode(t, res) != "invalid_tool_input" {
			t.Errorf("%s of a hidden tool = %s (code %q), want it refused as hidden", bridged, resultText(res), errorCode(t, res))
		}
	}
	if res := call(t, cs, "everything__get-env", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "hidden") {
		t.Errorf("a direct call of a hidden tool = %s, want it refused as hidden", resultText(res))
	}

	describe := func(name string) string {
		t.Helper()
		res := call(t, cs, "tool_describe", map[string]any{"name": name})
		var d struct{ Description string }
		if err := json.Unmarshal([]byte(resultText(res)), &d); err != nil || res.IsError {
			t.Fatalf("tool_describe %s = %s", name, resultText(res))
		}
		return d.Description
	}
	if got := describe("everything__echo"); got != shown {
		t.Errorf("with show: true, tool_describe gives %q, want %q", got, shown)
	}
	if got, want := describe("everything__get-resource-links"), original["get-resource-links"].Description; got != want || got == searchOnly {
		t.Errorf("without show, tool_describe gives %q, want the server's own %q", got, want)
	}
	listed := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[tool.Name] = tool
	}
	if l := listed["everything__echo"]; l == nil || l.Description != shown {
		t.Errorf("tools/list with show: true = %+v, want description %q", l, shown)
	}
	if l, o := listed["everything__get-tiny-image"], original["get-tiny-image"]; l == nil || !sameDefinition(l, o) {
		t.Errorf("tools/list without show changed the definition:\n%+v\nserver's:\n%+v", l, o)
	}
	if _, ok := listed["everything__get-env"]; ok {
		t.Errorf("a hidden tool is listed")
	}
	if !strings.Contains(h.log.String(), "overrides[4]") || strings.Count(h.log.String(), "selects no tool") != 1 {
		t.Errorf("the override that selects nothing is not reported once:\n%s", h.log.String())
	}
}

// serverTools lists a server's tools by connecting to it directly.
func serverTools(t *testing.T, command string, args []string) map[string]*mcp.Tool {
	t.Helper()
	cmd := exec.Command(command, args...)
	testupstream.Own(t, cmd)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	out := map[string]*mcp.Tool{}
	for tool, err := range direct.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// sameDefinition reports whether a listed tool is the server's, but for its name and
// the _meta the gateway adds to a pinned tool.
func sameDefinition(listed, own *mcp.Tool) bool {
	if listed == nil || own == nil {
		return false
	}
	a, b := *listed, *own
	a.Name, b.Name = "", ""
	a.Meta, b.Meta = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// An override that selects nothing is named in the warning by its place in the config
// as written, not among the rules kept once those with problems are left out (two
// different rules were both called overrides[1]), and its globs are shown quoted and cut
// short: a NUL byte escaped, a long glob not flooding the log.
func TestUnmatchedOverrideNamedAsWritten(t *testing.T) {
	long := "nothing__\\0" + strings.Repeat("x", 500)
	cfg, _, err := config.Parse([]byte(`
overrides:
  - {tools: "alpha__[", hide: true}
  - {tools: alpha__echo, keywords: [say]}
  - {tools: "`+long+`", keywords: [never]}
`), "toolshed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers = []config.Server{testServer("alpha", "basic")}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	waitLog(t, h, "selects no tool")
	log := h.log.String()
	want := `warning: overrides[2] (servers none, tools ["nothing__\x00` + strings.Repeat("x", 70) + `"… (510 bytes)]) selects no tool`
	if !strings.Contains(log, want) || strings.Count(log, "selects no tool") != 1 {
		t.Errorf("the log does not say, once, %q:\n%.2000s", want, log)
	}
	if strings.ContainsRune(log, 0) || strings.Contains(log, strings.Repeat("x", 100)) {
		t.Errorf("the log has the glob raw:\n%.2000s", log)
	}
}
