package search_test

import (
	"fmt"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
)

func exampleSnapshot() *catalog.Snapshot {
	sources, _ := catalog.Parse([]byte(`{"servers": [
		{"name": "weather", "tools": [
			{"name": "get_forecast", "description": "Get the weather forecast for a location"},
			{"name": "get_alerts", "description": "Get weather alerts for a US state"}
		]},
		{"name": "slack", "tools": [
			{"name": "send_message", "description": "Send a message to a channel"},
			{"name": "list_channels", "description": "List the channels of the workspace"}
		]}
	]}`), "example", "")
	snap, _ := catalog.Build(sources)
	return snap
}

func ExampleIndex_Search() {
	ix := search.NewIndex(exampleSnapshot())
	results, _ := ix.Search("post a message to the team channel", search.Options{Limit: 3})
	for _, r := range results {
		fmt.Println(r.Tool.Qualified, r.Match)
	}
	results, _ = ix.Search("Get Alerts", search.Options{Limit: 1})
	fmt.Println(results[0].Tool.Qualified, results[0].Match)
	_, err := ix.Search("", search.Options{})
	fmt.Println(err)
	// Output:
	// slack__send_message bm25
	// slack__list_channels bm25
	// weather__get_alerts exact
	// invalid_tool_input: the query is empty; describe the tool you need in a few words, such as "create github issue"
}

func ExampleIndex_Regex() {
	ix := search.NewIndex(exampleSnapshot())
	results, _ := ix.Regex("^get_|CHANNEL", search.Options{})
	for _, r := range results {
		fmt.Println(r.Tool.Qualified, r.Field)
	}
	_, err := ix.Regex("get_(?!alerts)", search.Options{})
	fmt.Println(err)
	// Output:
	// weather__get_forecast name
	// weather__get_alerts name
	// slack__list_channels name
	// slack__send_message description
	// invalid_tool_input: the pattern uses a negative lookahead `(?!...)`, which this regular-expression engine (RE2, linear-time) does not support; rewrite the pattern without it
}

func ExampleCache() {
	var cache search.Cache
	first := cache.Index(exampleSnapshot())
	// Rebuilding the same catalog gives a new snapshot with the same hash: no new index.
	again := cache.Index(exampleSnapshot())
	fmt.Println(first == again, cache.Len())
	results, _ := again.Search("forecast", search.Options{})
	fmt.Println(results[0].Tool.Qualified)
	// Output:
	// true 1
	// weather__get_forecast
}

// The search log's evidence (Log.Evidence: search.Evidence is the same type) gives
// an index that has learned which tools earlier requests led to. Build it whenever the
// catalog's index or the evidence changes; searches then run on it as on any index.
func ExampleIndex_WithEvidence() {
	ix := search.NewIndex(exampleSnapshot())
	results, _ := ix.Search("ping the oncall crew", search.Options{Limit: 1})
	fmt.Println("before:", results[0].Tool.Qualified, results[0].Match)

	now := time.Now()
	learned := ix.WithEvidence([]search.Evidence{
		{Tool: "slack__send_message", Query: "ping the oncall crew that the deploy is done", Count: 4, Last: now.Add(-2 * time.Hour)},
		{Tool: "weather__get_alerts", Query: "is a storm coming to Texas", Count: 1, Last: now.Add(-24 * time.Hour)},
	}, now)
	results, _ = learned.Search("ping the oncall crew", search.Options{Limit: 1})
	fmt.Println("after:", results[0].Tool.Qualified, results[0].Match)
	results, _ = learned.Search("storm in Florida", search.Options{Limit: 1})
	fmt.Println("after:", results[0].Tool.Qualified, results[0].Match)
	// Output:
	// before: weather__get_alerts substring
	// after: slack__send_message bm25
	// after: weather__get_alerts bm25
}
