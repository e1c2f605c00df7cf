package bridge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/tokens"
)

// genericWords are words of tool names that say what a tool does to something, not
// what it is about: a server's listing names what its tools are about.
var genericWords = map[string]bool{
	"get": true, "list": true, "create": true, "update": true, "delete": true, "set": true, "add": true,
	"remove": true, "search": true, "find": true, "read": true, "write": true, "run": true, "fetch": true,
	"query": true, "show": true, "make": true, "new": true, "edit": true, "check": true, "post": true,
	"put": true, "send": true, "open": true, "close": true, "start": true, "stop": true, "info": true,
	"all": true, "by": true, "id": true, "details": true, "detail": true, "data": true, "tool": true,
	"use": true, "do": true, "take": true, "view": true, "generate": true, "handle": true, "execute": true, "call": true, "retrieve": true, "manage": true,
}

// summaryWords is how many words a server's listing gives at most.
const summaryWords = 3

// serverListing names the servers of tools, the most tools first, each with its tool
// count and the words its tools' names use most ("github (26 tools: issue, pull,
// repository)"), as many as fit in budget tokens, then how many more there are.
func serverListing(tools []*catalog.Tool, budget int) string {
	type server struct {
		name  string
		tools int
		words map[string]int    // by index term: "comment" and "comments" are one
		shown map[string]string // a term's shortest word
	}
	byName := map[string]*server{}
	var servers []*server
	for _, t := range tools {
		s := byName[t.Server]
		if s == nil {
			s = &server{name: t.Server, words: map[string]int{}, shown: map[string]string{}}
			byName[t.Server] = s
			servers = append(servers, s)
		}
		s.tools++
		seen := map[string]bool{}
		search.Words(t.Name, func(word, term string) {
			if term == "" || genericWords[word] || len(word) < 3 || seen[term] || strings.Contains(strings.ToLower(t.Server), word) {
				return
			}
			seen[term] = true
			s.words[term]++
			if w, ok := s.shown[term]; !ok || len(word) < len(w) {
				s.shown[term] = word
			}
		})
	}
	sort.SliceStable(servers, func(i, j int) bool { return servers[i].tools > servers[j].tools })
	var b strings.Builder
	for i, s := range servers {
		item := fmt.Sprintf("%s (%d %s", s.name, s.tools, plural(s.tools, "tool", "tools"))
		if terms := topWords(s.words, s.tools); len(terms) > 0 {
			for i, term := range terms {
				terms[i] = s.shown[term]
			}
			item += ": " + strings.Join(terms, ", ")
		}
		item += ")"
		if i > 0 {
			item = ", " + item
		}
		more := ""
		if rest := len(servers) - i - 1; rest > 0 {
			more = fmt.Sprintf(" and %d more", rest)
		}
		if i > 0 && tokens.Count(b.String()+item+more) > budget {
			fmt.Fprintf(&b, " and %d more", len(servers)-i)
			break
		}
		b.WriteString(item)
	}
	return b.String()
}

// topWords returns up to summaryWords of words, the most used first (ties in
// alphabetical order); with more than summaryWords tools, only words two tools share.
func topWords(words map[string]int, tools int) []string {
	list := make([]string, 0, len(words))
	for w, n := range words {
		if tools <= summaryWords || n >= 2 {
			list = append(list, w)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if words[list[i]] != words[list[j]] {
			return words[list[i]] > words[list[j]]
		}
		return list[i] < list[j]
	})
	return list[:min(len(list), summaryWords)]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
