package messages

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolshed/toolshed/search"
)

// runSearch answers one call of a search tool: the content of its tool_search_tool_result
// (a tool_search_tool_search_result with tool_references, or a
// tool_search_tool_result_error), and the names of the tools found.
func (t *turn) runSearch(tool *Tool, input json.RawMessage) (json.RawMessage, []string) {
	pr, budget := t.pr, t.p.maxSearches()-t.searches
	fail := func(code search.Code, format string, args ...any) (json.RawMessage, []string) {
		c, _ := json.Marshal(struct {
			Type         string `json:"type"`
			ErrorCode    string `json:"error_code"`
			ErrorMessage string `json:"error_message"`
		}{"tool_search_tool_result_error", string(code), fmt.Sprintf(format, args...)})
		return c, nil
	}
	if budget <= 0 {
		return fail(search.TooManyRequests, "this request has used all its tool searches; answer with the tools already loaded, or ask the user to continue")
	}
	var in struct {
		Pattern *string          `json:"pattern"`
		Query   *string          `json:"query"`
		Limit   *json.RawMessage `json:"limit"`
	}
	if err := json.Unmarshal(orEmptyObject(input), &in); err != nil {
		return fail(search.InvalidToolInput, "the input must be a JSON object: %v", err)
	}
	limit := search.DefaultLimit
	if in.Limit != nil && string(*in.Limit) != "null" {
		var n float64
		if json.Unmarshal(*in.Limit, &n) != nil || n != float64(int(n)) || n < 1 || n > search.MaxLimit {
			return fail(search.InvalidToolInput, "limit must be a whole number from 1 to %d, got %s", search.MaxLimit, *in.Limit)
		}
		limit = int(n)
	}
	if pr.catalog == nil {
		return refs(nil), nil
	}
	var found []search.Result
	var err error
	if tool.SearchKind() == "regex" {
		if in.Pattern == nil {
			return fail(search.InvalidToolInput, "the input needs a \"pattern\": a regular expression such as \"weather\"")
		}
		found, err = pr.catalog.index.Regex(*in.Pattern, search.Options{Limit: limit, Budget: t.p.RegexBudget})
	} else {
		if in.Query == nil {
			return fail(search.InvalidToolInput, "the input needs a \"query\": a few words saying what the tool does")
		}
		found, err = t.p.bm25(t.ctx, pr.toolSet, *in.Query, search.Options{Limit: limit})
	}
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return fail(se.Code, "%s", se.Message)
		}
		return fail(search.Unavailable, "the search failed: %v; retry with backoff", err)
	}
	names := make([]string, 0, len(found))
	for _, r := range found {
		names = append(names, r.Tool.Name)
	}
	return refs(names), names
}

func refs(names []string) json.RawMessage {
	type ref struct {
		Type     string `json:"type"`
		ToolName string `json:"tool_name"`
	}
	rs := make([]ref, 0, len(names))
	for _, n := range names {
		rs = append(rs, ref{"tool_reference", n})
	}
	b, _ := json.Marshal(struct {
		Type           string `json:"type"`
		ToolReferences []ref  `json:"tool_references"`
	}{"tool_search_tool_search_result", rs})
	return b
}
