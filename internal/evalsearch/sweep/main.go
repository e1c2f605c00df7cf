// Command sweep measures ranking settings on the benchmark sets: each variant is
// search.DefaultParams with the fields of a JSON object laid over it, measured as
// `toolshed eval` measures the shipped settings. It is how a ranking change is checked
// at its neighbouring values on every set (bench/README.md, "Ranking changes"):
//
//	go run ./internal/evalsearch/sweep '{}' '{"Coord": 0.2}' '{"Coord": 0.4}'
//
// prints, per variant and set, recall@1, recall@5 and nDCG@5.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/eval"
	"github.com/toolshed/toolshed/internal/evalsearch"
	"github.com/toolshed/toolshed/search"
)

func main() {
	sets := flag.String("sets", "livemcpbench,bfcl,apibench,restbench", "comma-separated `SETS` of the bench folder")
	dir := flag.String("bench", "bench", "the benchmark `FOLDER`")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sweep [--sets a,b] [--bench DIR] PARAMS-JSON...")
		fmt.Fprintln(os.Stderr, `  for example: sweep '{}' '{"Coord": 0.2}' '{"Weight": [2, 2, 1, 0.8, 0.5, 1]}'`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	// Every variant is read before any is measured, so a bad one fails at once.
	params := make([]search.Params, flag.NArg())
	for i, v := range flag.Args() {
		params[i] = search.DefaultParams
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields() // a misspelt field would measure the defaults
		if err := dec.Decode(&params[i]); err != nil {
			fail(fmt.Errorf("variant %s: %v; give a JSON object of search.Params fields, such as {\"Coord\": 0.2}", v, err))
		}
	}
	type set struct {
		name    string
		queries []eval.Query
		snap    *catalog.Snapshot
	}
	var loaded []set
	for _, name := range strings.Split(*sets, ",") {
		qs, err := eval.ReadQueries(*dir + "/" + name + "/queries.jsonl")
		if err != nil {
			fail(err)
		}
		snap, problems := catalog.LoadFiles(*dir + "/" + name + "/catalog.json")
		if len(problems) != 0 {
			fail(fmt.Errorf("%s: %v", name, problems))
		}
		loaded = append(loaded, set{name, qs, snap})
	}
	fmt.Printf("%-40s", "variant (R@1 R@5 nDCG@5)")
	for _, s := range loaded {
		fmt.Printf(" | %-17s", s.name)
	}
	fmt.Println()
	for i, v := range flag.Args() {
		p := params[i]
		fmt.Printf("%-40s", v)
		for _, s := range loaded {
			r := eval.Run(s.queries, s.snap.Len(), 0, evalsearch.Search(search.NewIndexParams(s.snap, p)))
			fmt.Printf(" | %.3f %.3f %.3f", r.Recall1, r.Recall5, r.NDCG5)
		}
		fmt.Println()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sweep:", err)
	os.Exit(1)
}
