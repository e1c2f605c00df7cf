package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestSavingsAgree: serve's summary line and toolshed tokens give the same saving for
// the same catalog (the built-in one), written the same way. serve said "100% fewer
// tokens" where tokens said 99.8%: 283 tokens are not none of 128,878.
func TestSavingsAgree(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"tokens", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("tokens: exit %d: %s", code, stderr.String())
	}
	var tok tokensOutput
	if err := json.Unmarshal(stdout.Bytes(), &tok); err != nil {
		t.Fatal(err)
	}
	if tok.SavingsPct >= 100 || tok.WithSearchTokens == 0 {
		t.Fatalf("tokens reports a saving of %v%% with %d tokens left: not the case this test is about", tok.SavingsPct, tok.WithSearchTokens)
	}

	sources, _ := builtin.Sources()
	g, err := gateway.New(&config.Config{}, gateway.Options{Catalogs: sources, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	out := &testupstream.SyncBuffer{}
	g.OnEvent(newProgress(out, len(g.Statuses()), false).event)
	_, stop := runGateway(g)
	defer stop()
	all := fmt.Sprintf("toolshed: %d of %d servers ready, ", tok.Servers, tok.Servers)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), all) {
		if time.Now().After(deadline) {
			t.Fatalf("no summary line with every server ready within a minute:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := out.String()[strings.Index(out.String(), all):]
	figures := "(" + thousands(tok.WithSearchTokens) + " tokens) in place of " + thousands(tok.Tools) + " tools (" + thousands(tok.TotalTokens) + " tokens)"
	if !strings.Contains(line, figures) {
		t.Fatalf("serve and tokens count different tokens: tokens says %s; serve:\n%s", figures, line)
	}
	if want := ", " + percent.Text(tok.SavingsPct) + " fewer tokens."; !strings.Contains(line, want) {
		t.Errorf("serve's summary lacks %q, the saving toolshed tokens reports:\n%s", want, line)
	}
}
