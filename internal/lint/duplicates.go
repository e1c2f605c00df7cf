package lint

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/percent"
)

// similarDescriptions is the cosine similarity of two descriptions' words from which a
// model is likely to take one tool for the other.
const similarDescriptions = 0.8

// stopWords carry no meaning of their own in a description.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true,
	"for": true, "by": true, "with": true, "from": true, "at": true, "as": true, "is": true, "are": true, "be": true,
	"this": true, "that": true, "it": true, "its": true, "can": true, "will": true, "if": true, "use": true,
}

// vector is a description's word counts, with its norm.
type vector struct {
	counts map[string]float64
	norm   float64
}

func wordVector(s string) vector {
	v := vector{counts: map[string]float64{}}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) > 1 && !stopWords[w] {
			v.counts[w]++
		}
	}
	for _, c := range v.counts {
		v.norm += c * c
	}
	v.norm = math.Sqrt(v.norm)
	return v
}

func cosine(a, b vector) float64 {
	if a.norm == 0 || b.norm == 0 {
		return 0
	}
	if len(a.counts) > len(b.counts) {
		a, b = b, a
	}
	dot := 0.0
	for w, c := range a.counts {
		dot += c * b.counts[w]
	}
	return dot / (a.norm * b.norm)
}

// nearDuplicates finds pairs of tools of different servers that a model will confuse:
// the same words in their names, or descriptions that say nearly the same thing. Each
// pair is reported once, on the tool that comes first in the catalog.
func nearDuplicates(snap *catalog.Snapshot) []Finding {
	tools := snap.Tools()
	vecs := make([]vector, len(tools))
	prefixes := prefixWords(tools)
	names := make([]string, len(tools))   // the name's words but its server's prefix, sorted, to compare
	display := make([]string, len(tools)) // the same words in the name's order
	for i, t := range tools {
		vecs[i] = wordVector(t.SearchDescription())
		var w []string
		for _, x := range nameWords(t.Name) {
			if !prefixes[t.Server][x] {
				w = append(w, x)
			}
		}
		display[i] = strings.Join(w, " ")
		sort.Strings(w)
		names[i] = strings.Join(w, " ")
	}
	var out []Finding
	for i, a := range tools {
		for j := i + 1; j < len(tools); j++ {
			b := tools[j]
			if a.Server == b.Server {
				continue
			}
			// The same bare name is a name-prefix finding already.
			sameName := names[i] != "" && names[i] == names[j] && a.Name != b.Name
			sim := cosine(vecs[i], vecs[j])
			if !sameName && (sim < similarDescriptions || a.Name == b.Name) {
				continue
			}
			var why []string
			if sameName {
				why = append(why, fmt.Sprintf("the same name words (%s)", display[i]))
			}
			if sim >= similarDescriptions {
				why = append(why, "descriptions "+percent.Text(sim*100)+" alike")
			}
			out = append(out, Finding{Severity: Warning, Check: CheckNearDuplicate, Tool: a.Qualified, Server: a.Server, Related: []string{b.Qualified},
				Message: fmt.Sprintf("%s and %s have %s, so a model may call one for the other", a.Qualified, b.Qualified, strings.Join(why, " and ")),
				Fix:     "say in each description which service and data it works on and when to prefer it; or hide the one you do not need with a toolshed override"})
		}
	}
	return out
}

// prefixWords returns, per server, the words of its tools' names that only say which
// service they belong to: its name's words, and words most of its tools' names share
// ("browser" of playwright's browser_click, browser_type, ...). Without them,
// playwright__browser_take_screenshot and chrome-devtools__take_screenshot are seen to
// do the same.
func prefixWords(tools []*catalog.Tool) map[string]map[string]bool {
	count := map[string]map[string]int{}
	size := map[string]int{}
	out := map[string]map[string]bool{}
	for _, t := range tools {
		if count[t.Server] == nil {
			count[t.Server] = map[string]int{}
			out[t.Server] = map[string]bool{}
			for _, w := range nameWords(t.Server) {
				out[t.Server][w] = true
			}
		}
		size[t.Server]++
		seen := map[string]bool{}
		for _, w := range nameWords(t.Name) {
			if !seen[w] {
				seen[w] = true
				count[t.Server][w]++
			}
		}
	}
	for server, words := range count {
		if size[server] < 3 {
			continue
		}
		for w, n := range words {
			if n*5 >= size[server]*3 { // in 60% of the names or more
				out[server][w] = true
			}
		}
	}
	return out
}
