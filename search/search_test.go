package search_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/search"
)

func TestSearchExactName(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		query string
		want  []string // the exact matches, which come first
	}{
		{"create_issue", []string{"github__create_issue", "gitlab__create_issue"}},
		{"Create Issue", []string{"github__create_issue", "gitlab__create_issue"}},
		{"CREATE-ISSUE", []string{"github__create_issue", "gitlab__create_issue"}},
		{"  create   issue ", []string{"github__create_issue", "gitlab__create_issue"}},
		{"github__create_issue", []string{"github__create_issue"}},
		{"GitHub Create Issue", []string{"github__create_issue"}},
		{"gitlab-create-issue", []string{"gitlab__create_issue"}},
		{"get_forecast", []string{"weather__get_forecast"}},
		{"weather_get_forecast", []string{"weather__get_forecast"}},
		{"solve.quadratic_equation", []string{"calc__solve_quadratic_equation"}},
		{"solve quadratic equation", []string{"calc__solve_quadratic_equation"}},
		{"calc__solve_quadratic_equation", []string{"calc__solve_quadratic_equation"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			results, err := ix.Search(tc.query, search.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) < len(tc.want) {
				t.Fatalf("results %v, want %v first", names(results), tc.want)
			}
			if got := names(results[:len(tc.want)]); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("first results %v, want %v", got, tc.want)
			}
			for i, r := range results {
				exact := i < len(tc.want)
				if exact != (r.Match == search.MatchExact) || exact != math.IsInf(r.Score, 1) {
					t.Errorf("result %d %s: match %q score %v", i, r.Tool.Qualified, r.Match, r.Score)
				}
				for _, earlier := range results[:i] {
					if earlier.Tool == r.Tool {
						t.Errorf("%s listed twice", r.Tool.Qualified)
					}
				}
			}
		})
	}
}

func TestSearchRanking(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		query string
		first string
	}{
		{"weather forecast", "weather__get_forecast"},
		{"what will the weather be tomorrow", "weather__get_forecast"},
		{"send a slack message", "slack__send_message"},
		{"post message to channel", "slack__send_message"},
		{"read a file", "files__read_file"},
		{"overwrite a file", "files__write_file"},
		{"open pull request", "github__create_pull_request"},
		{"take a picture of the screen", "files__screenshot_capture"},
		{"quadratic", "calc__solve_quadratic_equation"},
		{"weather alerts for a state", "weather__get_alerts"},
		{"list issues of a repository", "github__list_issues"},
		{"public channels", "slack__list_channels"},
		{"Creating issues", "github__create_issue"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			results, err := ix.Search(tc.query, search.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 || results[0].Tool.Qualified != tc.first {
				t.Fatalf("results %v, want %s first", names(results), tc.first)
			}
			for i, r := range results {
				if r.Match != search.MatchBM25 || r.Score <= 0 || i > 0 && r.Score > results[i-1].Score {
					t.Errorf("result %d %s: match %q score %v after %v", i, r.Tool.Qualified, r.Match, r.Score, results[max(i-1, 0)].Score)
				}
			}
		})
	}
}

// TestSearchDeterministic checks that equal scores keep catalog order and that the same
// search gives the same answer every time.
func TestSearchDeterministic(t *testing.T) {
	var tools []string
	for i := range 30 {
		tools = append(tools, fmt.Sprintf(`{"name": "tool_%02d", "description": "Same words everywhere."}`, i))
	}
	ix := search.NewIndex(catalogtest.Snapshot(t, `{"tools": [`+strings.Join(tools, ",")+`]}`))
	results, err := ix.Search("same words", search.Options{Limit: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 30 {
		t.Fatalf("%d results", len(results))
	}
	for i, r := range results {
		if r.Tool.Index != i || r.Score != results[0].Score {
			t.Errorf("result %d is tool %d with score %v", i, r.Tool.Index, r.Score)
		}
	}
	again, _ := ix.Search("same words", search.Options{Limit: 30})
	if !reflect.DeepEqual(names(again), names(results)) {
		t.Error("the same search gave another answer")
	}
}

// TestSearchRepeatedWords checks that a word said twice counts once: a request that
// repeats a word, or a file path that repeats a folder's name, ranks and scores the
// tools as if the word were said once.
func TestSearchRepeatedWords(t *testing.T) {
	ix := builtinIndex(t)
	for _, tc := range []struct{ once, repeated string }{
		{"create a github issue", "create a github issue github issue"},
		{"save the report to /tmp/notes/report.md", "save the report report to /tmp/notes/report.md"},
		{"take a screenshot of the page", "take a screenshot screenshot of the page page"},
		{"send a slack message", "send a Slack message SLACK message"},
	} {
		want, err := ix.Search(tc.once, search.Options{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.Search(tc.repeated, search.Options{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !reflect.DeepEqual(scores(got), scores(want)) {
			t.Errorf("Search(%q) = %v\nwant what Search(%q) gives: %v", tc.repeated, scores(got), tc.once, scores(want))
		}
	}
}

// scores returns results as qualified names with scores.
func scores(results []search.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, fmt.Sprintf("%s %.4f", r.Tool.Qualified, r.Score))
	}
	return out
}

func TestSearchAllow(t *testing.T) {
	ix := smallIndex(t)
	snap := ix.Snapshot()
	allowed := setOf(t, snap, "slack__send_message", "slack__list_channels", "gitlab__create_issue", "files__write_file")
	tests := []struct {
		query string
		want  []string
	}{
		{"create issue", []string{"gitlab__create_issue", "files__write_file"}},
		{"github__create_issue", []string{"gitlab__create_issue", "files__write_file"}},
		{"send a slack message", []string{"slack__send_message", "slack__list_channels"}},
		{"send message", []string{"slack__send_message"}},
		{"weather forecast", []string{}},
		{"eensho", []string{}},
		{"annel", []string{"slack__list_channels"}},
	}
	for _, tc := range tests {
		results, err := ix.Search(tc.query, search.Options{Allow: allowed, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(results); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Search(%q) within the set = %v, want %v", tc.query, got, tc.want)
		}
	}
	// An empty set allows nothing; a nil set allows everything.
	if results, _ := ix.Search("create_issue", search.Options{Allow: catalog.NewSet(snap)}); len(results) != 0 {
		t.Errorf("an empty set found %v", names(results))
	}
	if results, _ := ix.Search("create_issue", search.Options{Allow: nil}); len(results) < 2 {
		t.Errorf("a nil set found %v", names(results))
	}
}

func TestSearchLimit(t *testing.T) {
	ix := smallIndex(t)
	const query = "create get list file issue message weather" // matches every tool but one
	all, err := ix.Search(query, search.Options{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Fatalf("the query matches only %d tools", len(all))
	}
	tests := []struct {
		limit, want int
	}{
		{0, search.DefaultLimit}, {-1, search.DefaultLimit}, {1, 1}, {3, 3}, {search.MaxLimit + 1, len(all)}, {math.MaxInt, len(all)},
	}
	for _, tc := range tests {
		results, err := ix.Search(query, search.Options{Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != tc.want || !reflect.DeepEqual(names(results), names(all[:tc.want])) {
			t.Errorf("Limit %d: %v, want the first %d of %v", tc.limit, names(results), tc.want, names(all))
		}
	}
	// The exact matches also respect the limit.
	if results, _ := ix.Search("create_issue", search.Options{Limit: 1}); len(results) != 1 || results[0].Match != search.MatchExact {
		t.Errorf("Limit 1 on an exact name: %v", names(results))
	}
}

// TestMaxLimit checks on a catalog larger than MaxLimit that no search returns more.
func TestMaxLimit(t *testing.T) {
	var tools []string
	for i := range search.MaxLimit + 50 {
		tools = append(tools, fmt.Sprintf(`{"name": "t%d", "description": "common"}`, i))
	}
	ix := search.NewIndex(catalogtest.Snapshot(t, `{"tools": [`+strings.Join(tools, ",")+`]}`))
	for _, limit := range []int{search.MaxLimit, search.MaxLimit + 1, 2 * search.MaxLimit} {
		results, err := ix.Search("common", search.Options{Limit: limit})
		if err != nil || len(results) != search.MaxLimit {
			t.Errorf("Search with Limit %d: %d results, %v; want %d", limit, len(results), err, search.MaxLimit)
		}
		results, err = ix.Regex("^t[0-9]", search.Options{Limit: limit, Budget: time.Minute})
		if err != nil || len(results) != search.MaxLimit {
			t.Errorf("Regex with Limit %d: %d results, %v; want %d", limit, len(results), err, search.MaxLimit)
		}
	}
}

func TestSearchInvalidQuery(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		name    string
		query   string
		message string
	}{
		{"empty", "", "the query is empty"},
		{"blank", " \t\n ", "the query is empty"},
		{"501 characters", strings.Repeat("a", search.MaxQueryLen+1), "the query is 501 characters; the limit is 500"},
		{"501 non-ASCII characters", strings.Repeat("é", search.MaxQueryLen+1), "the query is 501 characters"},
		{"long words", strings.Repeat("issue ", 200), "the query is 1200 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results, err := ix.Search(tc.query, search.Options{})
			if results != nil {
				t.Errorf("results %v alongside an error", names(results))
			}
			var se *search.Error
			if !errors.As(err, &se) || se.Code != search.InvalidToolInput {
				t.Fatalf("err = %v, want a *search.Error with code %s", err, search.InvalidToolInput)
			}
			if !errors.Is(err, search.ErrInvalidToolInput) || errors.Is(err, search.ErrExecutionTimeExceeded) {
				t.Errorf("errors.Is does not match by code: %v", err)
			}
			if !strings.Contains(se.Message, tc.message) || !strings.HasPrefix(err.Error(), "invalid_tool_input: ") {
				t.Errorf("message %q lacks %q", err, tc.message)
			}
		})
	}
	// At the limit, counted in characters, the query is accepted.
	for _, q := range []string{strings.Repeat("a", search.MaxQueryLen), strings.Repeat("é", search.MaxQueryLen), strings.Repeat("天", search.MaxQueryLen)} {
		if _, err := ix.Search(q, search.Options{}); err != nil {
			t.Errorf("a query of %d characters: %v", search.MaxQueryLen, err)
		}
	}
}

// TestShortenAndTruncate checks both ways of fitting a query into max characters: the
// result is the expected text and never longer than max.
func TestShortenAndTruncate(t *testing.T) {
	type cut struct {
		text string
		max  int
		want string
	}
	for _, fn := range []struct {
		name  string
		f     func(string, int) string
		tests []cut
	}{
		{"Truncate", search.Truncate, []cut{
			{"short query", 500, "short query"},
			{"create a new issue", 10, "create a"},
			{"abcdefghij", 5, "abcde"},
			{"éééééééééé", 4, "éééé"},
			{"one two three four five", 12, "one two thre"}, // no space near the cut
			{"one two three four five", 15, "one two three"},
			{strings.Repeat("word ", 200), search.MaxQueryLen, strings.TrimSpace(strings.Repeat("word ", 100))},
		}},
		{"Shorten", search.Shorten, []cut{
			{"Could you please find the weather for Paris?", 500, "Could you please find the weather for Paris?"}, // fits: unchanged
			{"Could you please find the weather for Paris?", 30, "find weather Paris?"},
			{"When is the next train to Lyon, and where does it stop?", 40, "When next train Lyon, where stop?"}, // question words stay
			{"I want the file /root/docs/a report.md saved", 30, "file /root/docs/a report.md"},
			{"please please please", 10, ""},
			{"the weather forecast for the coming week in Paris and in Lyon", 25, "weather forecast coming"},
		}},
	} {
		for _, tc := range fn.tests {
			got := fn.f(tc.text, tc.max)
			if got != tc.want {
				t.Errorf("%s(%q, %d) = %q, want %q", fn.name, tc.text, tc.max, got, tc.want)
			}
			if len([]rune(got)) > tc.max {
				t.Errorf("%s(%q, %d) is %d characters", fn.name, tc.text, tc.max, len([]rune(got)))
			}
		}
	}
}

// TestSearchEnumValues checks that the values a parameter accepts are searched with the
// tool, by words and by regex, as its parameter text.
func TestSearchEnumValues(t *testing.T) {
	ix := search.NewIndex(catalogtest.Snapshot(t, `{"servers": [{"name": "conv", "tools": [
		{"name": "convert", "description": "Convert a temperature.",
		 "inputSchema": {"type": "object", "properties": {"to": {"type": "string", "enum": ["kelvin", "rankine"]}}}},
		{"name": "round", "description": "Round a number to some digits.",
		 "inputSchema": {"type": "object", "properties": {"digits": {"type": "integer"}}}}]}]}`))
	results, err := ix.Search("rankine", search.Options{})
	if err != nil || len(results) != 1 || results[0].Tool.Name != "convert" || results[0].Match != search.MatchBM25 {
		t.Errorf("Search(rankine) = %v, %v; want convert by bm25", names(results), err)
	}
	results, err = ix.Regex("kel.in", search.Options{})
	if err != nil || len(results) != 1 || results[0].Tool.Name != "convert" || results[0].Field != "parameter" {
		t.Errorf("Regex(kel.in) = %+v, %v; want convert in its parameters", results, err)
	}
}

// TestSearchAcrossChinese checks that English and Chinese text meet through the glosses
// of package gloss: a request in English finds a tool described only in Chinese, and a
// request in Chinese a tool described only in English. The tools' names say nothing.
func TestSearchAcrossChinese(t *testing.T) {
	ix := search.NewIndex(catalogtest.Snapshot(t, `{"servers": [{"name": "s", "tools": [
		{"name": "t1", "description": "获取天气预报", "inputSchema": {"type": "object"}},
		{"name": "t2", "description": "查询新闻热门话题", "inputSchema": {"type": "object"}},
		{"name": "t3", "description": "Play a video game.", "inputSchema": {"type": "object"}},
		{"name": "t4", "description": "Send an email.", "inputSchema": {"type": "object"}}]}]}`))
	for _, tc := range []struct{ query, want string }{
		{"weather forecast", "t1"},
		{"popular news topics", "t2"},
		{"玩游戏", "t3"},
		{"视频", "t3"},
	} {
		results, err := ix.Search(tc.query, search.Options{Limit: 1})
		if err != nil || len(results) != 1 || results[0].Tool.Name != tc.want || results[0].Match != search.MatchBM25 {
			t.Errorf("Search(%q) = %v, %v; want %s by bm25", tc.query, names(results), err, tc.want)
		}
	}
	// The glosses are for ranking only: regex search reads the definitions as they are.
	if results, err := ix.Regex("weather", search.Options{}); err != nil || len(results) != 0 {
		t.Errorf("Regex(weather) = %v, %v; want nothing", names(results), err)
	}
}

// TestSearchFuzzyFallback checks the last fallback: query words that no tool uses and
// no name contains are read as misspellings of the catalog's terms, within its scope,
// and only when nothing else matched.
func TestSearchFuzzyFallback(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		query string
		want  []string // the first results, in order
	}{
		{"githb isue", []string{"github__create_issue", "github__list_issues"}},
		{"screnshot captuer", []string{"files__screenshot_capture"}},
		{"slakc chanels", []string{"slack__send_message", "slack__list_channels"}},
		{"wether", []string{"weather__get_forecast", "weather__get_alerts"}},
		{"qaudratic", []string{"calc__solve_quadratic_equation"}}, // its stem is one edit away
		{"gxthub", []string{"github__create_issue"}},
		{"xyzzy", nil},   // nothing one edit away
		{"qithub", nil},  // the first letter is not guessed
		{"isu", nil},     // too short to guess
		{"gxxthub", nil}, // two edits, for a word of fewer than eight letters
		{"rqpqsitory", []string{"github__create_issue"}}, // two edits, for a longer word
		{"rqpqsqtory", nil}, // three
	}
	for _, tc := range tests {
		results, err := ix.Search(tc.query, search.Options{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(results) < len(tc.want) || (tc.want == nil && len(results) != 0) {
			t.Errorf("Search(%q) = %v, want %v first", tc.query, names(results), tc.want)
			continue
		}
		if got := names(results[:len(tc.want)]); len(tc.want) > 0 && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Search(%q) = %v, want %v first", tc.query, names(results), tc.want)
		}
		for _, r := range results {
			if r.Match != search.MatchFuzzy {
				t.Errorf("Search(%q): %s matched by %q, want fuzzy", tc.query, r.Tool.Qualified, r.Match)
			}
		}
	}
	// The scope holds: only the gitlab issue tool is in it.
	snap := ix.Snapshot()
	results, err := ix.Search("githb isue", search.Options{Allow: setOf(t, snap, "gitlab__create_issue")})
	if err != nil || !reflect.DeepEqual(names(results), []string{"gitlab__create_issue"}) {
		t.Errorf("Search(githb isue) within gitlab__create_issue = %v, %v", names(results), err)
	}
	// A fragment of a name is still a substring match, not a guess.
	results, _ = ix.Search("eensho", search.Options{})
	if len(results) == 0 || results[0].Match != search.MatchSubstring {
		t.Errorf("Search(eensho) = %v, want a substring match", names(results))
	}
}

func TestSearchSubstringFallback(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		query string
		want  []string
	}{
		{"eensho", []string{"files__screenshot_capture"}},
		{"capt", []string{"files__screenshot_capture"}},
		{"ead_fi", []string{"files__read_file"}},
		{"quadr", []string{"calc__solve_quadratic_equation"}},
		{"zzz annel", []string{"slack__list_channels"}},
		{"xyzzy", []string{}},
		{"!!!", []string{}},
	}
	for _, tc := range tests {
		results, err := ix.Search(tc.query, search.Options{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(results); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Search(%q) = %v, want %v", tc.query, got, tc.want)
		}
		for _, r := range results {
			if r.Match != search.MatchSubstring {
				t.Errorf("Search(%q): %s matched by %q, want substring", tc.query, r.Tool.Qualified, r.Match)
			}
		}
	}
	// A query that scores does not fall back.
	results, _ := ix.Search("screenshot", search.Options{})
	if len(results) == 0 || results[0].Match != search.MatchBM25 {
		t.Errorf("Search(screenshot) = %+v", results)
	}
}

func TestSearchEmptyCatalog(t *testing.T) {
	snap, _ := catalog.Build(nil)
	ix := search.NewIndex(snap)
	if results, err := ix.Search("anything", search.Options{}); err != nil || len(results) != 0 {
		t.Errorf("Search over no tools = %v, %v", names(results), err)
	}
	if results, err := ix.Regex(".", search.Options{}); err != nil || len(results) != 0 {
		t.Errorf("Regex over no tools = %v, %v", names(results), err)
	}
	if ix.Snapshot() != snap {
		t.Error("Snapshot is not the indexed snapshot")
	}
}

func TestErrorIs(t *testing.T) {
	err := search.Errorf(search.Unavailable, "down for %d seconds", 5)
	if err.Error() != "unavailable: down for 5 seconds" {
		t.Errorf("Error() = %q", err.Error())
	}
	tests := []struct {
		target error
		want   bool
	}{
		{search.ErrUnavailable, true},
		{&search.Error{Code: search.Unavailable, Message: "down for 5 seconds"}, true},
		{&search.Error{Code: search.Unavailable, Message: "other"}, false},
		{search.ErrTooManyRequests, false},
		{search.ErrInvalidToolInput, false},
		{errors.New("unavailable: down for 5 seconds"), false},
	}
	for _, tc := range tests {
		if got := errors.Is(fmt.Errorf("wrapped: %w", err), tc.target); got != tc.want {
			t.Errorf("errors.Is(err, %v) = %v, want %v", tc.target, got, tc.want)
		}
	}
}

// TestSearchNamedInQuery checks that a tool a query names as an identifier among other
// words comes first, in the order named, and that plain words do not count as names.
func TestSearchNamedInQuery(t *testing.T) {
	ix := smallIndex(t)
	tests := []struct {
		query string
		named []string // the tools that must come first, as MatchNamed
	}{
		{"use the 'get_forecast' function for Paris", []string{"weather__get_forecast"}},
		{"first call write_file, then read_file().", []string{"files__write_file", "files__read_file"}},
		{"run weather__get_alerts for Texas", []string{"weather__get_alerts"}},
		{"call getForecast with the coordinates", []string{"weather__get_forecast"}},
		{"getForecast", []string{"weather__get_forecast"}},
		{"solve.quadratic_equation for x", []string{"calc__solve_quadratic_equation"}},
		{"file a create-issue on both trackers", []string{"github__create_issue", "gitlab__create_issue"}},
		// Not identifiers, or no such tool: ranked as usual.
		{"get forecast for Paris", nil},
		{"read the file then write it", nil},
		{"use the get_weather_now function", nil},
		{"the _private name and trailing_ one", nil},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			results, err := ix.Search(tc.query, search.Options{Limit: 8})
			if err != nil {
				t.Fatal(err)
			}
			var named []string
			for i, r := range results {
				if r.Match == search.MatchNamed {
					if i != len(named) {
						t.Errorf("named tool %s at %d, after a ranked one", r.Tool.Qualified, i)
					}
					named = append(named, r.Tool.Qualified)
				}
			}
			if !reflect.DeepEqual(named, tc.named) {
				t.Errorf("named %v, want %v (results %v)", named, tc.named, names(results))
			}
		})
	}
}

// TestSearchPathVerbs checks that a verb said of a local file path asks for that file
// operation, and that a URL or no path leaves the ranking alone.
func TestSearchPathVerbs(t *testing.T) {
	snap := catalogtest.Snapshot(t, `{"servers": [
 {"name": "fs", "tools": [
  {"name": "read_file", "description": "Return the contents of a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
  {"name": "write_file", "description": "Write content to a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}
 ]},
 {"name": "office", "tools": [
  {"name": "save_presentation", "description": "Save the open presentation.", "inputSchema": {"type": "object"}},
  {"name": "open_presentation", "description": "Open a presentation to edit it.", "inputSchema": {"type": "object"}},
  {"name": "export_chart", "description": "Export a chart as an image.", "inputSchema": {"type": "object"}}
 ]}
]}`)
	on := search.NewIndex(snap)
	p := search.DefaultParams
	p.PathVerbs = 0
	off := search.NewIndexParams(snap, p)
	first := func(ix *search.Index, q string) string {
		t.Helper()
		results, err := ix.Search(q, search.Options{Limit: 5})
		if err != nil || len(results) == 0 {
			t.Fatalf("%q: %v, %v", q, results, err)
		}
		return results[0].Tool.Qualified
	}
	tests := []struct {
		query     string
		with, off string // the first result with path verbs, and without
	}{
		{"save the meeting notes to /tmp/notes.md", "fs__write_file", "office__save_presentation"},
		{"open /etc/hosts", "fs__read_file", "office__open_presentation"},
		{"export the numbers to ./out/numbers.csv", "fs__write_file", "office__export_chart"},
		// A URL is not a file path, and no path means no file operation.
		{"open https://example.com/presentation", "office__open_presentation", "office__open_presentation"},
		{"save the meeting notes", "office__save_presentation", "office__save_presentation"},
	}
	for _, tc := range tests {
		if got := first(on, tc.query); got != tc.with {
			t.Errorf("%q: first %s, want %s", tc.query, got, tc.with)
		}
		if got := first(off, tc.query); got != tc.off {
			t.Errorf("%q without path verbs: first %s, want %s", tc.query, got, tc.off)
		}
	}
}

// FuzzSearch checks the BM25 path on arbitrary queries: it never panics, refuses only
// empty or over-long queries, returns at most the limit, each tool once, exact and named
// matches first; and Shorten always makes a query the search accepts.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{
		"create a github issue", "use the 'get_forecast' function", "save it to /tmp/a.md",
		"getForecast", "open https://x.y/z", "when is it", "天气 forecast", "a_b.c-d", "\xff\xfe",
		"the the the", "solve.quadratic_equation(1, 2)", strings.Repeat("save /x/y.md ", 60),
	} {
		f.Add(q, 5)
	}
	ix := smallIndex(f)
	f.Fuzz(func(t *testing.T, q string, limit int) {
		results, err := ix.Search(q, search.Options{Limit: limit})
		if err != nil {
			var e *search.Error
			if !errors.As(err, &e) || e.Code != search.InvalidToolInput {
				t.Fatalf("%q: error %v is not an invalid_tool_input search error", q, err)
			}
			if strings.TrimSpace(q) != "" && len([]rune(q)) <= search.MaxQueryLen {
				t.Fatalf("%q: refused a query that is neither empty nor too long: %v", q, err)
			}
		}
		want := limit
		if want <= 0 {
			want = search.DefaultLimit
		}
		if len(results) > want {
			t.Fatalf("%q, limit %d: %d results", q, limit, len(results))
		}
		seen := map[*catalog.Tool]bool{}
		ranked := false
		for _, r := range results {
			if seen[r.Tool] {
				t.Fatalf("%q: %s twice", q, r.Tool.Qualified)
			}
			seen[r.Tool] = true
			first := r.Match == search.MatchExact || r.Match == search.MatchNamed
			if first && ranked {
				t.Fatalf("%q: %s (%s) after a ranked result", q, r.Tool.Qualified, r.Match)
			}
			ranked = ranked || !first
		}
		if s := search.Shorten(q, search.MaxQueryLen); strings.TrimSpace(s) != "" {
			if _, err := ix.Search(s, search.Options{}); err != nil {
				t.Fatalf("Shorten(%q) = %q, which search refuses: %v", q, s, err)
			}
		}
	})
}
