package lint

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
)

// The kinds of self-retrieval queries, each made from one of a tool's own words.
const (
	QueryDescription = "description" // the first sentence of its description, without its name's words
	QueryTitle       = "title"       // its title
	QueryName        = "name"        // its name's words ("create issue" for create_issue)
)

// RetrievalSummary is how well one kind of query made from each tool's own words finds
// the tool among the whole catalog.
type RetrievalSummary struct {
	Query string `json:"query"`
	// Tools is how many tools had such a query; Top1 and Top5 how many came back first
	// or in the first five.
	Tools int `json:"tools"`
	Top1  int `json:"top1"`
	Top5  int `json:"top5"`
}

// selfQueries returns the queries made from t's own words, by kind; a kind t has no
// words for is left out. echo is the description's first sentence when, without the
// name's words, it has fewer than two words that mean anything: it only repeats the
// name.
func selfQueries(t *catalog.Tool) (queries map[string]string, echo string) {
	out := map[string]string{}
	name := nameWords(t.Name)
	sentence := firstSentence(t.SearchDescription())
	if q := withoutWords(sentence, name); len(wordVector(q).counts) >= 2 {
		out[QueryDescription] = q
	} else if sentence != "" {
		echo = sentence
	}
	if title := strings.TrimSpace(t.SearchTitle()); title != "" && !strings.EqualFold(strings.Join(nameWords(title), " "), strings.Join(name, " ")) {
		out[QueryTitle] = title
	}
	if len(name) > 0 {
		out[QueryName] = strings.Join(name, " ")
	}
	return out, echo
}

// firstSentence returns the first sentence of s: up to the first '.', '!' or '?' that
// ends a word, or the first line break.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for i := 0; i < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (i+1 == len(s) || s[i+1] == ' ') {
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

// withoutWords returns s without the words of drop (compared case-insensitively, and
// ignoring a plural s), cut to maxSelfQueryWords words, so that the query tests what the
// description says rather than the name it repeats.
func withoutWords(s string, drop []string) string {
	skip := map[string]bool{}
	for _, w := range drop {
		skip[w] = true
	}
	var keep []string
	for _, w := range strings.Fields(s) {
		core := strings.ToLower(strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		if skip[core] || skip[strings.TrimSuffix(core, "s")] || core == "" {
			continue
		}
		keep = append(keep, w)
		if len(keep) == maxSelfQueryWords {
			break
		}
	}
	return strings.Join(keep, " ")
}

// selfRetrieval searches the catalog for each tool with its own words and reports the
// tools those words do not find in the first selfRetrievalTopN results.
func selfRetrieval(ix *search.Index) ([]RetrievalSummary, []Finding) {
	kinds := []string{QueryDescription, QueryTitle, QueryName}
	sums := map[string]*RetrievalSummary{}
	for _, k := range kinds {
		sums[k] = &RetrievalSummary{Query: k}
	}
	var out []Finding
	for _, t := range ix.Snapshot().Tools() {
		queries, echo := selfQueries(t)
		var misses []string
		if echo != "" {
			misses = append(misses, fmt.Sprintf("its description's first sentence (%q) says little its name does not, so only the name's words find it", bridge.Snippet(echo, 80)))
		}
		var ahead []string
		for _, k := range kinds {
			q, ok := queries[k]
			if !ok {
				continue
			}
			rank, before := rankOf(ix, q, t)
			s := sums[k]
			s.Tools++
			if rank == 1 {
				s.Top1++
			}
			if rank >= 1 && rank <= selfRetrievalTopN {
				s.Top5++
				continue
			}
			where := fmt.Sprintf("at rank %d", rank)
			if rank == 0 {
				where = fmt.Sprintf("not in the first %d", retrievalSearchSize)
			}
			misses = append(misses, fmt.Sprintf("its %s %q finds it %s", k, q, where))
			for _, b := range before {
				if !contains(ahead, b) && len(ahead) < 3 {
					ahead = append(ahead, b)
				}
			}
		}
		if len(misses) == 0 {
			continue
		}
		// A description that only repeats the name is a note; a tool its own words
		// rank below the top five is a warning.
		sev := Warning
		if echo != "" && len(misses) == 1 {
			sev = Info
		}
		msg := strings.Join(misses, "; ")
		if len(ahead) > 0 {
			msg += "; first come " + strings.Join(ahead, ", ")
		}
		out = append(out, Finding{Severity: sev, Check: CheckSelfRetrieval, Tool: t.Qualified, Server: t.Server, Message: msg, Related: ahead,
			Fix: "start the description with what the tool does and to what, in the words users ask with, and say what sets it apart from the tools that come first; or add keywords with a toolshed override"})
	}
	res := make([]RetrievalSummary, 0, len(kinds))
	for _, k := range kinds {
		res = append(res, *sums[k])
	}
	return res, out
}

// rankOf searches for q and returns t's rank (1 for the first result, 0 when it is not
// among the first retrievalSearchSize) and the tools ranked above it (at most three).
func rankOf(ix *search.Index, q string, t *catalog.Tool) (int, []string) {
	res, err := ix.Search(search.Shorten(q, search.MaxQueryLen), search.Options{Limit: retrievalSearchSize})
	if err != nil {
		return 0, nil
	}
	var before []string
	for i, r := range res {
		if r.Tool == t {
			return i + 1, before
		}
		if len(before) < 3 {
			before = append(before, r.Tool.Qualified)
		}
	}
	return 0, before
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SelfQuery is a query made of a tool's own words: the first sentence of its
// description, without its name's words (see Report.Retrieval).
type SelfQuery struct {
	Query string
	Tool  *catalog.Tool
}

// DescriptionQueries returns each tool's description query, for tools that have one:
// what lint measures self-retrieval with, for a caller that ranks them its own way
// (with embeddings, say).
func DescriptionQueries(snap *catalog.Snapshot) []SelfQuery {
	var out []SelfQuery
	for _, t := range snap.Tools() {
		qs, _ := selfQueries(t)
		if q, ok := qs[QueryDescription]; ok {
			out = append(out, SelfQuery{q, t})
		}
	}
	return out
}
