package messages

import (
	"fmt"
	"strings"
	"testing"
)

// toolsBody is a request whose tools are a search tool, one tool not deferred and n
// deferred tools with descriptions of about desc bytes; salt makes the list distinct.
func toolsBody(salt string, n, desc int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"tool_search_tool_bm25_20251119","name":"search"},{"name":"plain","input_schema":{"type":"object"}}`)
	words := strings.Repeat("fetch weather forecast for a city and report temperature ", desc/56+1)[:desc]
	for i := range n {
		fmt.Fprintf(&b, `,{"name":"tool_%s_%d","description":"%s %s %d","input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"defer_loading":true}`, salt, i, salt, words, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// prepareBody decodes and prepares body as the handler does.
func prepareBody(t *testing.T, p *Proxy, body []byte) (pr *prepared, hit bool) {
	t.Helper()
	req, err := p.decodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	hit = req.toolSet != nil
	pr, aerr := p.prepare(req)
	if aerr != nil {
		t.Fatal(aerr)
	}
	return pr, hit
}

// TestToolCacheBoundedInBytes churns the tool-list cache with distinct large lists: what
// it keeps never passes its budget of bytes, the lists sent again while kept still hit,
// and a list larger than the whole budget is answered but not kept.
func TestToolCacheBoundedInBytes(t *testing.T) {
	const budget = 8 << 20
	p := &Proxy{ToolCacheBytes: budget}
	one := toolsBody("x0", 300, 1000)
	pr, _ := prepareBody(t, p, one)
	size := pr.toolSet.size()
	if size < int64(len(one)) || size > budget/2 {
		t.Fatalf("a list of %d bytes is estimated at %d bytes; the test needs 2 to fit the budget of %d", len(one), size, budget)
	}
	for i := range 24 {
		body := toolsBody(fmt.Sprintf("x%d", i), 300, 1000)
		first, hit := prepareBody(t, p, body)
		if hit != (i == 0) {
			t.Errorf("list %d: cache hit %v on its first request", i, hit)
		}
		again, hit := prepareBody(t, p, body)
		if !hit || again.toolSet != first.toolSet {
			t.Errorf("list %d sent again right away: hit %v, same tool set %v", i, hit, again.toolSet == first.toolSet)
		}
		if bytes, lists := p.toolSets.retained(); bytes > budget || lists == 0 {
			t.Fatalf("after list %d: the cache keeps %d lists of %d bytes, budget %d", i, lists, bytes, budget)
		}
	}
	if _, hit := prepareBody(t, p, toolsBody("x0", 300, 1000)); hit {
		t.Error("the first list is still kept after 23 others")
	}

	// A list over the whole budget is answered, and not kept.
	before, lists := p.toolSets.retained()
	big := toolsBody("big", 3000, 1000)
	pr, _ = prepareBody(t, p, big)
	if pr.toolSet.size() <= budget {
		t.Fatalf("the big list is estimated at %d bytes, not over the budget of %d", pr.toolSet.size(), budget)
	}
	if _, hit := prepareBody(t, p, big); hit {
		t.Error("a list larger than the budget was kept")
	}
	if after, n := p.toolSets.retained(); after != before || n != lists {
		t.Errorf("a list larger than the budget changed the cache: %d lists of %d bytes, were %d of %d", n, after, lists, before)
	}
}
