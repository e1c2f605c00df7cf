package search

import (
	"strings"
	"unicode/utf8"
)

// The thesaurus bridges the words people use in requests and the words tool authors use in
// definitions: a user saves a report, the tool writes a file; a user wants a picture, the
// tool takes a screenshot. Each group is a set of words used interchangeably when talking
// about software tools. A query term adds its group's other terms at a reduced weight (see
// Params.Synonyms), so an exact match always outranks a synonym match.
//
// The groups are general English and software vocabulary, written without reference to
// any benchmark's queries; a group belongs here only if the words are interchangeable in
// most tool descriptions.
var synonymGroups = []string{
	// actions
	"create make new add generate build compose",
	"delete remove erase destroy purge drop discard",
	"update edit modify change alter patch revise",
	"get fetch retrieve obtain read load",
	"find search lookup locate discover query seek",
	"list enumerate show display browse view",
	"save write store persist export record",
	"send post publish submit share notify",
	"run execute launch invoke start trigger",
	"stop kill terminate halt cancel abort",
	"download fetch pull",
	"upload push put",
	"navigate visit open goto browse",
	"click press tap",
	"type fill enter input",
	"calculate compute evaluate arithmetic calculator math",
	"summarize summary digest overview abstract",
	"translate translation translator",
	"convert transform translate export",
	"analyze analysis analyse inspect examine",
	"copy duplicate clone",
	"move rename relocate",
	"schedule book reserve booking reservation",
	"monitor track watch observe",
	"compare diff difference",
	"check verify validate test",
	"describe explain detail details info information",
	// things
	"file document files",
	"directory folder dir",
	"image picture photo screenshot png jpg jpeg snapshot",
	"video movie clip film mp4",
	"audio sound music song wav mp3",
	"document doc docx word",
	"spreadsheet excel xlsx xls csv sheet workbook",
	"presentation powerpoint ppt pptx slide slides deck",
	"markdown md",
	"chart graph plot diagram visualization visualize",
	"map location place address coordinates geocode latitude longitude gps",
	"route directions navigation path itinerary",
	"nearby near around vicinity surrounding",
	"weather forecast temperature climate",
	"time date clock today now current timezone tomorrow yesterday",
	"news headline headlines article articles story stories",
	"trending trend trends hot popular top ranking rank",
	"stock stocks ticker equity shares",
	"price cost fee fare pricing",
	"email mail inbox",
	"message chat dm",
	"repository repo",
	"issue bug ticket",
	"web website webpage page site url link",
	"browser browse webpage",
	"html webpage",
	"paper papers publication research preprint arxiv",
	"user account profile member",
	"code source program script",
	"log logs logging",
	"error exception failure fault",
	"alert alerts warning warnings alarm",
	"database db sql",
	"container docker",
	"kubernetes k8s cluster",
	"package library dependency module npm",
	"dictionary definition meaning define",
	"encyclopedia wikipedia wiki",
	"recipe recipes cook cooking dish meal",
	"restaurant food dining cuisine",
	"hotel accommodation lodging",
	"flight flights airline plane",
	"train railway rail",
	"ticket tickets",
	"job jobs career position",
	"question answer ask",
	"random dice roll",
	"note notes memo",
	"task todo tasks",
	"calendar event events meeting appointment",
	"contact contacts person people",
	"company business organization enterprise corporation",
	"game games gaming",
	"crypto cryptocurrency bitcoin coin token",
	"memory remember recall",
}

// questionWords map the question words of a request, which are stop words, to the kind
// of answer they ask for: "when" wants a date, "where" a location.
var questionWords = normalizeAll(map[string][]string{
	"when":  {"date", "time"},
	"where": {"location", "address", "place"},
	"who":   {"person", "name", "contact"},
	"how":   {"count", "number", "amount"},
})

// normalizeAll turns the words of a word map into index terms, once at start.
func normalizeAll(m map[string][]string) map[string][]string {
	for k, words := range m {
		for i, w := range words {
			words[i] = normalize(w)
		}
		m[k] = words
	}
	return m
}

// pathWords are terms a query implies when it names a file by path or extension
// ("/root/report.md", "sales.xlsx"): it is about files.
var pathWords = []string{"file", "path"}

// synonyms maps an index term to the terms of its groups, built from synonymGroups
// through the same normalization as the index.
var synonyms = buildSynonyms()

func buildSynonyms() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range strings.Fields(g) {
			if t := normalize(w); t != "" {
				terms = append(terms, t)
			}
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !contains(m[t], u) {
					m[t] = append(m[t], u)
				}
			}
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// looksLikePath reports a query word that names a file: it has a '/' or '\', or ends in a
// dot and a short alphanumeric extension after a name ("report.md", "/root/a/b").
// isPunct reports the punctuation around a word in a sentence, which looksLikePath
// ignores: ".,;:!?()[]{}" and quotes.
func isPunct(r rune) bool { return r < utf8.RuneSelf && punct[r] }

var punct = func() (t [utf8.RuneSelf]bool) {
	for _, c := range ".,;:!?()[]{}'\"`" {
		t[c] = true
	}
	return t
}()

func looksLikePath(word string) bool {
	if strings.ContainsAny(word, `/\`) && len(strings.Trim(word, `/\.`)) > 0 {
		return true
	}
	dot := strings.LastIndexByte(word, '.')
	if dot <= 0 || dot == len(word)-1 || len(word)-dot-1 > 5 {
		return false
	}
	for _, c := range []byte(word[dot+1:]) {
		if !isASCIIAlnum(c) {
			return false
		}
	}
	// "e.g." and version numbers are not files.
	ext := word[dot+1:]
	return !isDigit(ext[0]) && len(word[:dot]) > 1
}

// pathVerbs maps the stem of a verb that, said of a file path, names a file operation to
// the term of that operation: "save the report to /tmp/a.md" asks for a tool that writes
// a file, as if it said "write". Only verbs whose sense with a path is clear are here.
var pathVerbs = func() map[string]string {
	m := map[string]string{}
	for verb, op := range map[string]string{
		"save": "write", "write": "write", "store": "write", "export": "write", "dump": "write",
		"read": "read", "open": "read", "load": "read",
	} {
		m[normalize(verb)] = normalize(op)
	}
	return m
}()
