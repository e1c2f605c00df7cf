package search

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/gloss"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/internal/scale"
)

// tokensOf is the general tokenizer's output for s.
func tokensOf(s string) []string {
	var out []string
	tokenize(s, nil, func(tok []byte, h uint64) {
		out = append(out, string(tok))
	})
	return out
}

// termsOf is the query path's analysis of s: tokenize then normalize (through the stem
// cache, as queries use it), stop words dropped.
func termsOf(s string) []string {
	var out []string
	for _, tok := range tokensOf(s) {
		if term := stemOf([]byte(tok), hashToken([]byte(tok))); term.text != "" {
			out = append(out, term.text)
		}
	}
	return out
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"  _-./ ", nil},
		{"create_issue", []string{"create", "issue"}},
		{"list_pull_requests", []string{"list", "pull", "requests"}},
		{"createIssue", []string{"create", "issue", "createissue"}},
		{"CreateIssue", []string{"create", "issue", "createissue"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"getHTTPResponse", []string{"get", "http", "response", "gethttpresponse"}},
		{"HTTP", []string{"http"}},
		{"kebab-case-name", []string{"kebab", "case", "name"}},
		{"dotted.names", []string{"dotted", "names"}},
		{"path/like/names", []string{"path", "like", "names"}},
		{"ipv4", []string{"ipv", "4", "ipv4"}},
		{"IPv6Address", []string{"i", "pv", "6", "address", "ipv6address"}},
		{"HTML5Parser", []string{"html", "5", "parser", "html5parser"}},
		{"x2y", []string{"x", "2", "y", "x2y"}},
		{"2024-01-15", []string{"2024", "01", "15"}},
		{"GitHub", []string{"git", "hub", "github"}},
		{"github", []string{"github"}},
		{"The QUICK brown", []string{"the", "quick", "brown"}},
		{"天气预报", []string{"天", "气", "预", "报"}},
		{"ひらがなカタカナ", []string{"ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ"}},
		{"abc中文def", []string{"abc", "中", "文", "def"}},
		{"搜索search", []string{"搜", "索", "search"}},
		{"café", []string{"café"}},
		{"Café au lait", []string{"café", "au", "lait"}},
		{"caféBar", []string{"cafébar"}},
		{"naïve_user", []string{"naïve", "user"}},
		{"ÉCOLE", []string{"école"}},
		{"Straße", []string{"straße"}},
		{"ΑΒΓ δέλτα", []string{"αβγ", "δέλτα"}},
		{"한국어 검색", []string{"한국어", "검색"}},
		{"🚀launch🚀", []string{"launch"}},
		{"a😀b", []string{"a", "b"}},
		{"cafe\u0301", []string{"cafe\u0301"}},
		{"bad\xffbytes", []string{"bad", "bytes"}},
		{"tab\tnew\nline", []string{"tab", "new", "line"}},
	}
	for _, tc := range tests {
		if got := tokensOf(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"create_issue", []string{"creat", "issu"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"ipv4", []string{"ipv", "4", "ipv4"}},
		{"GitHub", []string{"git", "hub", "github"}},
		// stop words, in any case, go; words that carry meaning stay
		{"the list of all the files", []string{"list", "all", "file"}},
		{"Please could you THE", nil},
		{"turn off before open", []string{"turn", "off", "befor", "open"}},
		{"path/like/names", []string{"path", "name"}},
		// stemming
		{"creates created creating create", []string{"creat", "creat", "creat", "creat"}},
		{"running runs", []string{"run", "run"}},
		{"repositories repository", []string{"repositor", "repositor"}},
		// Porter2's final y→i is dropped so derivations meet
		{"summary summarize summaries", []string{"summar", "summar", "summar"}},
		{"category categorize", []string{"categor", "categor"}},
		{"notify notification", []string{"notif", "notif"}},
		// short words, digits and non-ASCII words are kept as they are
		{"api url id", []string{"api", "url", "id"}},
		{"v2 2024", []string{"v", "2", "v2", "2024"}},
		{"café crèmes", []string{"café", "crèmes"}},
		{"天气", []string{"天", "气"}},
	}
	for _, tc := range tests {
		if got := termsOf(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("terms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"create_issue", "create_issue"},
		{"Create Issue", "create_issue"},
		{"  create--issue  ", "create_issue"},
		{"CREATE.ISSUE", "create_issue"},
		{"github__create_issue", "github_create_issue"},
		{"Café Crème", "café_crème"},
		{"__x__", "x"},
		{"", ""},
		{strings.Repeat("Ab_", 100), strings.TrimSuffix(strings.Repeat("ab_", 100), "_")},
		{strings.Repeat("aB-", 42) + "cD", strings.Repeat("ab_", 42) + "cd"}, // 128 bytes
		{strings.Repeat("X", 129), strings.Repeat("x", 129)},                 // longer than any valid name
		{"___", ""},
		{"Get2FA-Code_v3..", "get2fa_code_v3"},
	}
	for _, tc := range tests {
		if got := normalizeName(tc.in); got != tc.want {
			t.Errorf("normalizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// The ASCII path, which builds take for every name, against the definition.
	real, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{}, trickyTexts...)
	for _, tc := range tests {
		names = append(names, tc.in)
	}
	snap, _ := catalog.Build(real)
	for _, tool := range snap.Tools() {
		names = append(names, tool.Name, tool.Qualified)
	}
	ascii := 0
	for _, s := range names {
		want := normalizeAnyName(s)
		if got, ok := normalizeASCIIName(s); ok {
			ascii++
			if got != want {
				t.Fatalf("normalizeASCIIName(%q) = %q, want %q", s, got, want)
			}
		}
		if got := nameHash(s); got != hashToken([]byte(want)) {
			t.Fatalf("nameHash(%q) is not the hash of %q", s, want)
		}
	}
	if ascii < len(names)*9/10 {
		t.Errorf("only %d of %d names took the ASCII path", ascii, len(names))
	}
}

// FuzzNormalizeName checks the ASCII path of normalizeName against the definition on
// any text, and that neither panics.
func FuzzNormalizeName(f *testing.F) {
	for _, s := range []string{"create_issue", "Get2FA-Code", "__x__", "Café", strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := normalizeAnyName(s)
		if got, ok := normalizeASCIIName(s); ok && got != want {
			t.Fatalf("normalizeASCIIName(%q) = %q, want %q", s, got, want)
		}
		if got := nameHash(s); got != hashToken([]byte(want)) {
			t.Fatalf("nameHash(%q) is not the hash of %q", s, want)
		}
	})
}

func TestOptionsLimit(t *testing.T) {
	tests := []struct{ limit, want int }{
		{0, DefaultLimit}, {-3, DefaultLimit}, {1, 1}, {7, 7}, {MaxLimit, MaxLimit}, {MaxLimit + 1, MaxLimit}, {math.MaxInt, MaxLimit},
	}
	for _, tc := range tests {
		if got := (Options{Limit: tc.limit}).limit(); got != tc.want {
			t.Errorf("Options{Limit: %d}.limit() = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// TestTokenizeGolden runs the analyzer over testdata/analyze/input.txt, one text a line,
// and compares the tokens and terms with testdata/analyze/terms.golden (go test -update
// rewrites it).
func TestTokenizeGolden(t *testing.T) {
	input, err := os.ReadFile("testdata/analyze/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(string(input), "\n"), "\n") {
		fmt.Fprintf(&out, "%s\n  tokens: %s\n  terms:  %s\n", line, strings.Join(tokensOf(line), " "), strings.Join(termsOf(line), " "))
	}
	golden.Check(t, "testdata/analyze/terms.golden", out.Bytes())
}

// fieldTerms is, for each tool, each field's term frequencies.
type fieldTerms []map[string]int // indexed by field

// referenceTerms analyzes each tool's fields with the general path, tokenize+normalize.
func referenceTerms(tools []*catalog.Tool) []fieldTerms {
	out := make([]fieldTerms, len(tools))
	for d, t := range tools {
		ft := make(fieldTerms, numFields)
		for f := range ft {
			ft[f] = map[string]int{}
		}
		add := func(f int, s string) {
			for _, term := range termsOf(s) {
				ft[f][term]++
			}
		}
		add(fieldName, t.Name)
		add(fieldTitle, t.Title)
		add(fieldDesc, t.Description)
		add(fieldDesc, string(gloss.Append(nil, t.Description)))
		for _, p := range t.Params {
			add(fieldParamName, p.Name)
			add(fieldParamDesc, p.Description)
			for _, v := range p.Enum {
				add(fieldParamDesc, v)
			}
		}
		add(fieldServer, t.Server)
		out[d] = ft
	}
	return out
}

// workerTerms runs a build's first step (worker.text over every field) on tools, with
// one worker that takes them all from the start, or from the end if back, and returns
// what it recorded, in terms.
func workerTerms(tools []*catalog.Tool, back bool) []fieldTerms {
	ws := newWorkersK(tools, 2)
	w := ws[0]
	if back {
		w = ws[1]
	}
	w.tokenize(tools, make([]uint64, 2*len(tools)))
	stemNew([]*worker{w})()
	out := make([]fieldTerms, len(tools))
	w.eachTool(func(d int, block []posting) {
		ft := make(fieldTerms, numFields)
		for f := range ft {
			ft[f] = map[string]int{}
		}
		for _, e := range block[w.span[d][0]:w.span[d][1]] {
			for f := range numFields {
				if e.tf[f] > 0 {
					ft[f][w.stems[e.term].text] += int(e.tf[f])
				}
			}
		}
		out[d] = ft
	})
	return out
}

// indexTerms reads each tool's per-field term frequencies back out of a built index. It
// builds one index per field with only that field weighted, no length normalization and
// a K1 so large that a posting's score is its term frequency.
func indexTerms(t *testing.T, snap *catalog.Snapshot) (vocab []string, out []fieldTerms, docsOf map[string][]int32) {
	t.Helper()
	out = make([]fieldTerms, snap.Len())
	for d := range out {
		out[d] = make(fieldTerms, numFields)
		for f := range out[d] {
			out[d][f] = map[string]int{}
		}
	}
	docsOf = map[string][]int32{}
	const k1 = 1e6
	for f := range numFields {
		p := Params{K1: k1}
		p.Weight[f] = 1
		ix := NewIndexParams(snap, p)
		if vocab == nil {
			vocab = slices.Clone(ix.termText)
		} else if !slices.Equal(vocab, ix.termText) {
			t.Fatalf("the vocabulary depends on the ranking parameters")
		}
		if ix.terms.n != len(ix.termText) {
			t.Fatalf("%d terms in the table, %d in the list", ix.terms.n, len(ix.termText))
		}
		for id, term := range ix.termText {
			if got, _ := ix.termID(stemOfText(term)); got != int32(id) {
				t.Fatalf("term %q has id %d in the table and %d in the list", term, got, id)
			}
			docs := ix.postDoc[ix.postStart[id]:ix.postStart[id+1]]
			if len(docs) == 0 {
				t.Errorf("term %q has no postings", term)
			}
			for i := 1; i < len(docs); i++ {
				if docs[i-1] >= docs[i] {
					t.Fatalf("postings of %q are not strictly increasing: %v", term, docs)
				}
			}
			if f == 0 {
				docsOf[term] = slices.Clone(docs)
			} else if !slices.Equal(docsOf[term], docs) {
				t.Fatalf("postings of %q depend on the ranking parameters", term)
			}
			for i, d := range docs {
				s := float64(ix.postScore[int(ix.postStart[id])+i])
				if tf := int(math.Round(s * k1 / (k1 + 1 - s))); tf > 0 {
					out[d][f][term] = tf
				}
			}
		}
	}
	return vocab, out, docsOf
}

// trickyTexts are inputs that exercise every branch of both tokenizers.
var trickyTexts = []string{
	"", " ", "create_issue", "createIssue", "getHTTPResponse", "HTTPServer", "ipv4 IPv6Address",
	"GitHub gitHub GITHUB", "kebab-case.dotted/path", "x2y3z", "HTML5Parser",
	"aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0", // 30 parts
	"a1a1a1a1a1a1a1a1",               // 16 parts
	"a1a1a1a1a1a1a1a1a",              // 17 parts
	"b2b2b2b2b2b2b2b",                // 15 parts
	"aAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaA",
	"the and of to a an THE The", "Please list all the files in this directory",
	"创建一个新的问题", "ひらがな カタカナ 漢字", "abc中文def", "中文abc", "搜索search工具",
	"\u4dff\u4e00\u9fff\ua000", "中\u0301文", "中文\xe4\xb8", "获取café天气", "获取_天气-预报.数据",
	"café", "Café crème brûlée", "caféBar", "HTTPServerCafé", "naïve_bayesClassifier",
	"über_cool", "ÄÖÜ äöü", "İstanbul", "Straße", "cafe\u0301s", "\u212aelvin \u017fong",
	"x😀y", "😀😀 launch 🚀rocket🚀", "emoji🙂Name", "a\u200bb", "١٢٣ arabic digits",
	"creates created creating", "summary summarize summaries", "notify notification",
	"repeat repeat repeat repeat Repeat REPEAT", "read_file readFile ReadFile READ_FILE",
	"ünicode_first then ascii", "mixedÜmlautsAndCamelCase", "x", "I", "a_b_c_d_e",
	"v1.2.3-beta+build.5", "user@example.com https://example.com/a/b?c=d&e=f",
	strings.Repeat("word ", 50), strings.Repeat("Ab", 40), "τέλος Ωmega", "ǅemal ǈ",
}

// trickyCatalog builds n tools whose names, titles, descriptions, parameters and servers
// are drawn from trickyTexts.
func trickyCatalog(t testing.TB, n int) *catalog.Snapshot {
	t.Helper()
	k := len(trickyTexts)
	var servers []catalog.Source
	for i := range n {
		if i%50 == 0 {
			servers = append(servers, catalog.Source{Server: fmt.Sprintf("srv-%s-%d", catalog.ServerNameFrom(trickyTexts[(i/50)%k]), i/50)})
		}
		props := map[string]any{}
		for j := range i % 4 {
			prop := map[string]any{"type": "string", "description": trickyTexts[(i*3+j)%k]}
			if j == 1 {
				prop["enum"] = []string{trickyTexts[(i*17)%k], trickyTexts[(i*19+2)%k]}
			}
			props[fmt.Sprintf("%s_%d", trickyTexts[(i+j*5)%k], j)] = prop
		}
		tool := map[string]any{
			"name":        fmt.Sprintf("%s_%d", trickyTexts[i%k], i),
			"title":       trickyTexts[(i*7)%k],
			"description": trickyTexts[(i*11)%k] + " " + trickyTexts[(i*13+1)%k],
			"inputSchema": map[string]any{"type": "object", "properties": props},
		}
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		servers[len(servers)-1].Tools = append(servers[len(servers)-1].Tools, raw)
	}
	snap, problems := catalog.Build(servers)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if snap.Len() != n {
		t.Fatalf("%d tools, want %d", snap.Len(), n)
	}
	return snap
}

// TestBuildMatchesTokenize checks that the build's specialized tokenizer (worker.text)
// yields exactly the terms of the general path, tokenize+normalize, both in its own
// records and in the finished index, with the work split among several workers.
func TestBuildMatchesTokenize(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	snap := trickyCatalog(t, 2100)
	if w := newWorkers(snap.Tools()); len(w) < 4 {
		t.Fatalf("only %d build workers; the test needs two segments", len(w))
	}
	want := referenceTerms(snap.Tools())

	for _, back := range []bool{false, true} {
		got := workerTerms(snap.Tools(), back)
		for d := range want {
			for f := range numFields {
				if !reflect.DeepEqual(got[d][f], want[d][f]) {
					t.Fatalf("back %v: tool %s field %d: worker recorded %v, tokenize+normalize gives %v", back, snap.Tool(d).Qualified, f, got[d][f], want[d][f])
				}
			}
		}
	}

	vocab, fromIndex, docsOf := indexTerms(t, snap)
	wantVocab := map[string]bool{}
	wantDocs := map[string][]int32{}
	for d := range want {
		for f := range numFields {
			for term := range want[d][f] {
				wantVocab[term] = true
				if docs := wantDocs[term]; len(docs) == 0 || docs[len(docs)-1] != int32(d) {
					wantDocs[term] = append(docs, int32(d))
				}
			}
			if !reflect.DeepEqual(fromIndex[d][f], want[d][f]) {
				t.Fatalf("tool %s field %d: index has %v, tokenize+normalize gives %v", snap.Tool(d).Qualified, f, fromIndex[d][f], want[d][f])
			}
		}
	}
	gotVocab := map[string]bool{}
	for _, term := range vocab {
		if gotVocab[term] {
			t.Errorf("term %q twice in the vocabulary", term)
		}
		gotVocab[term] = true
	}
	if !reflect.DeepEqual(gotVocab, wantVocab) {
		for term := range gotVocab {
			if !wantVocab[term] {
				t.Errorf("index term %q is not a term of tokenize+normalize", term)
			}
		}
		for term := range wantVocab {
			if !gotVocab[term] {
				t.Errorf("term %q is missing from the index", term)
			}
		}
	}
	if !reflect.DeepEqual(docsOf, wantDocs) {
		for term, docs := range wantDocs {
			if !slices.Equal(docsOf[term], docs) {
				t.Errorf("term %q: index postings %v, want %v", term, docsOf[term], docs)
				break
			}
		}
	}
	for _, must := range []string{"café", "cafébar", "中", "httpserver", "creat", "summar", "ipv4", "a1a1a1a1a1a1a1a1a"} {
		if !gotVocab[must] {
			t.Errorf("vocabulary lacks %q", must)
		}
	}
	for _, stop := range []string{"the", "and", "please", ""} {
		if gotVocab[stop] {
			t.Errorf("vocabulary has stop word %q", stop)
		}
	}
}

// FuzzTokenize checks the tokenizer on arbitrary text: it never panics, every token is
// non-empty and lowercase, and the build path records exactly the query path's terms.
func FuzzTokenize(f *testing.F) {
	for _, s := range trickyTexts {
		f.Add(s)
	}
	for _, s := range []string{"\xff\xfe", "a\xc3", "ABCdef\xe2\x82", "\u0130\u0131", "\U0001F600", "ⅫⅪ Ⅰ", "ﬁle", "Ǆ", "ᾈ", strings.Repeat("aB", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 160 {
			// Long texts add nothing a short one cannot show (a word of more than
			// maxParts parts needs 33 bytes) and make minimizing inputs very slow;
			// TestBuildMatchesTokenize covers long texts.
			return
		}
		var toks []string
		tokenize(s, nil, func(tok []byte, h uint64) {
			if len(tok) == 0 {
				t.Fatalf("empty token in %q", s)
			}
			if !utf8.Valid(tok) {
				t.Fatalf("token %q of %q is not UTF-8", tok, s)
			}
			if strings.ToLower(string(tok)) != string(tok) {
				t.Fatalf("token %q of %q is not lowercase", tok, s)
			}
			if h != hashToken(tok) {
				t.Fatalf("token %q has hash %x, want %x", tok, h, hashToken(tok))
			}
			toks = append(toks, string(tok))
		})
		tools := []*catalog.Tool{{Name: s, Description: s + " " + s}}
		want := referenceTerms(tools)
		got := workerTerms(tools, false)
		for fld := range numFields {
			if !reflect.DeepEqual(got[0][fld], want[0][fld]) {
				t.Fatalf("%q field %d: build path %v, query path %v", s, fld, got[0][fld], want[0][fld])
			}
		}
		n := 0
		for _, c := range want[0][fieldName] {
			n += c
		}
		terms := termsOf(s)
		if n != len(terms) {
			t.Fatalf("%q: %d terms in the name, %d from the query path", s, n, len(terms))
		}
	})
}

// TestHashIn checks that the build's hash of a word inside a text, which reads the bytes
// around the word, is hashToken of the word lowercased, wherever the word sits.
func TestHashIn(t *testing.T) {
	for _, s := range []string{"", "a", "Ab9", "createIssue", "get_HTTP_response_v2", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij", "x-y.z", "0123456", "01234567", "012345678"} {
		for i := 0; i <= len(s); i++ {
			for j := i + 1; j <= len(s); j++ {
				w := s[i:j]
				if strings.IndexFunc(w, func(r rune) bool { return !isASCIIAlnum(byte(r)) || r >= utf8.RuneSelf }) >= 0 {
					continue
				}
				if got, want := hashIn(s, i, j), hashToken([]byte(strings.ToLower(w))); got != want {
					t.Errorf("hashIn(%q, %d, %d) = %x, want hashToken(%q) = %x", s, i, j, got, strings.ToLower(w), want)
				}
			}
		}
	}
}

// TestShapeOf checks shapeOf on its own, and that the shapes of a query and of its
// words, which rule them out before a closer look, never rule out a word that names a
// tool (isIdentifier) or a file (looksLikePath): on edge cases and on every benchmark
// query.
func TestShapeOf(t *testing.T) {
	for _, c := range []struct {
		s           string
		ident, path bool
		alnum       int
	}{
		{"", false, false, 0},
		{"plain words.", false, false, 10},
		{"ends with a dash -", false, false, 13},
		{"a - b. c _ d", false, false, 4},
		{"sort_list", true, false, 8},
		{"get-weather", true, false, 10},
		{"x_", false, false, 1},
		{"a._b", true, false, 2},
		{"_private", true, false, 7},
		{"e.g. this", true, true, 6},
		{"report.md", true, true, 8},
		{"v2.0", true, true, 3},
		{"end. Next", false, false, 7},
		{"...", false, false, 0},
		{"getWeather", true, false, 10},
		{"GET Weather", false, false, 10},
		{"open /etc/hosts", false, true, 12},
		{`C:\data`, false, true, 5},
		{"ünïcode", false, false, 5}, // ü and ï are not ASCII letters
	} {
		got := shapeOf(c.s)
		if got.ident != c.ident || got.path != c.path || got.alnum != c.alnum {
			t.Errorf("shapeOf(%q) = %+v, want ident %v, path %v, alnum %d", c.s, got, c.ident, c.path, c.alnum)
		}
	}

	queries, err := scale.Queries("../bench")
	if err != nil {
		t.Fatal(err)
	}
	queries = append(queries, "use sort_list.", "open /etc/hosts", `C:\data`, "(a.md)", "call getWeather!", "x.y-z")
	for _, q := range queries {
		for word := range strings.FieldsSeq(q) {
			w := strings.TrimFunc(word, isPunct)
			if w != "" && isIdentifier(w) && (!mayBeIdentifier(q) || !mayBeIdentifier(word)) {
				t.Errorf("identifier %q of %q is ruled out", w, q)
			}
			if looksLikePath(w) && !shapeOf(q).path {
				t.Errorf("path %q of %q is ruled out", w, q)
			}
		}
	}
}

// TestIsIdeograph checks isIdeograph's shortcuts against the Unicode tables over every
// rune, and that the runes it reports have no lowercase form, so tokenize may keep them.
func TestIsIdeograph(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
		if got := isIdeograph(r); got != want {
			t.Fatalf("isIdeograph(%U) = %v, want %v", r, got, want)
		}
		if want && unicode.ToLower(r) != r {
			t.Fatalf("%U is an ideograph with a lowercase form %U", r, unicode.ToLower(r))
		}
	}
}

// TestIsCJK checks the build's shortcut for Chinese characters over every rune, and over
// truncated and invalid encodings: isCJK holds exactly for the CJK Unified Ideographs,
// which tokenize makes tokens of one character, and hashCJK is their hashToken.
func TestIsCJK(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		s := string(r) + "x"
		want := r >= 0x4e00 && r <= 0x9fff
		if got := isCJK(s, 0); got != want {
			t.Fatalf("isCJK(%U) = %v, want %v", r, got, want)
		}
		if !want {
			continue
		}
		if !isIdeograph(r) {
			t.Fatalf("%U is not an ideograph", r)
		}
		if got, want := hashCJK(s, 0), hashToken([]byte(string(r))); got != want {
			t.Fatalf("hashCJK(%U) = %x, want hashToken = %x", r, got, want)
		}
	}
	for _, s := range []string{"", "\xe4", "\xe4\xb8", "中"[:2], "\xe4\xb8\x41", "\xe4\x41\x80", "\xe4\xb8\xc0", "\xea\x80\x80"} {
		if isCJK(s, 0) {
			t.Errorf("isCJK(%q) = true, want false", s)
		}
	}
}

// porter2 is the English stemmer alone, as normalize runs it.
func porter2(w string) string {
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	return env.Current()
}

// TestPorter2Keeps holds porter2Keeps and porter2Plural to the stemmer: every word the
// first says the stemmer keeps, the stemmer keeps, and every plural the second strips of
// its s, the stemmer strips the same way. The words are those of every real catalog and
// query, the stemmer's own exceptions, and words ending in each of its suffixes.
func TestPorter2Keeps(t *testing.T) {
	real, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	queries, err := scale.Queries("../bench")
	if err != nil {
		t.Fatal(err)
	}
	texts := append([]string{
		"succeed proceed exceed canning inning earring herring outing andes atlas bias cosmos",
		"dying early gently howe idly lying news only singly skies skis sky tying ugly",
		"generic magic attic tonic cubic deed need agreed field build shipping king thing",
		"ring config email model ful fall bell pool global useful criticism alarm form",
		"station million token domain order color actor user timer filter format input",
		"client comment agent payment list text event patent",
	}, queries...)
	for _, src := range real {
		for _, tool := range src.Tools {
			texts = append(texts, string(tool))
		}
	}
	seen := map[string]bool{}
	kept, plurals := 0, 0
	for _, text := range texts {
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) < 2 || seen[w] {
				continue
			}
			seen[w] = true
			k, p := checkPorter2Shortcuts(t, w)
			kept += k
			plurals += p
		}
	}
	if kept < len(seen)/5 {
		t.Errorf("porter2Keeps holds for %d of %d words, expected about a third", kept, len(seen))
	}
	if plurals < len(seen)/20 {
		t.Errorf("porter2Plural holds for %d of %d words, expected about a tenth", plurals, len(seen))
	}
}

// FuzzPorter2Keeps checks porter2Keeps and porter2Plural against the stemmer on arbitrary
// lowercase words.
func FuzzPorter2Keeps(f *testing.F) {
	for _, w := range []string{"github", "list", "token", "skis", "sky", "fall", "magic", "agreed", "tokens", "news", "gas", "menus"} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r
			}
			return -1
		}, strings.ToLower(s))
		if len(w) >= 2 {
			checkPorter2Shortcuts(t, w)
		}
	})
}

// checkPorter2Shortcuts checks what porter2Keeps and porter2Plural say of w, a lowercase
// word of two letters or more, against the stemmer, and counts which of them held.
func checkPorter2Shortcuts(t *testing.T, w string) (kept, plural int) {
	t.Helper()
	if porter2Keeps(w) {
		kept = 1
		if got := porter2(w); got != w {
			t.Errorf("porter2Keeps(%q), but the stemmer makes it %q", w, got)
		}
	}
	if len(w) >= 4 {
		if x, ok := porter2Plural(w); ok {
			plural = 1
			if got := porter2(w); got != x {
				t.Errorf("porter2Plural(%q) = %q, but the stemmer makes it %q", w, x, got)
			}
		}
	}
	return kept, plural
}

func TestWords(t *testing.T) {
	var got []string
	Words("Creating GitHub issues for the bugs", func(word, term string) {
		got = append(got, word+"="+term)
	})
	want := []string{"creating=creat", "git=git", "hub=hub", "github=github", "issues=issu", "for=", "the=", "bugs=bug"}
	if !slices.Equal(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}
