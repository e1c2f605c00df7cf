package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// useCache makes compiled a new, empty cache of maxBytes for the length of the test.
// The bridge tests do not run in parallel, so nothing else uses compiled meanwhile.
func useCache(t *testing.T, maxBytes int) *schemaCache {
	t.Helper()
	prev := compiled
	compiled = newSchemaCache(maxBytes)
	t.Cleanup(func() { compiled = prev })
	return compiled
}

// distinctTool is a tool whose input schema is the i-th of as many distinct ones as
// wanted: an object whose property "n" must be an integer of at least i. Every tenth
// cannot be compiled (its $ref points nowhere) when broken is set.
func distinctTool(i int, broken bool) *catalog.Tool {
	schema := fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","minimum":%d}},"required":["n"]}`, i)
	if broken && i%10 == 0 {
		schema = fmt.Sprintf(`{"type":"object","properties":{"n":{"$ref":"#/$defs/Missing%d"}}}`, i)
	}
	return &catalog.Tool{Qualified: fmt.Sprintf("s__t%d", i), InputSchema: json.RawMessage(schema)}
}

// TestSchemaCharge checks what a schema is charged in the cache: its length and
// subschemaCharge for each object and boolean, none of those inside strings.
func TestSchemaCharge(t *testing.T) {
	tests := []struct {
		schema string
		values int
	}{
		{`{}`, 1},
		{`{"type":"object"}`, 1},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":true,"c":false}}`, 5},
		{`{"description":"{true} or {false}, \"{\" \\","type":"object"}`, 1},
		{`{"enum":["t","f"],"minimum":1e5,"x":null}`, 1},
		{`{"a":"\\"}`, 1},
		{`{"a":"\\","b":{}}`, 2},
	}
	for _, tt := range tests {
		if got, want := schemaCharge([]byte(tt.schema)), len(tt.schema)+tt.values*subschemaCharge; got != want {
			t.Errorf("schemaCharge(%s) = %d, want %d (%d objects and booleans)", tt.schema, got, want, tt.values)
		}
	}
}

// checkCache checks what c holds against its bound and its own bookkeeping.
func checkCache(t *testing.T, c *schemaCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for e := c.lru.Front(); e != nil; e = e.Next() {
		sum += e.Value.(*cacheEntry).size
	}
	if c.bytes > c.maxBytes || sum != c.bytes || c.lru.Len() != len(c.entries) {
		t.Fatalf("cache holds %d schemas in its list, %d in its map, charged %d bytes (it counts %d), bound %d", c.lru.Len(), len(c.entries), sum, c.bytes, c.maxBytes)
	}
}

// TestSchemaProblemKeepsNothing checks that checking schemas for the catalog warnings
// (and lint) leaves no compiled schema behind, and that a call still compiles its
// tool's and keeps it.
func TestSchemaProblemKeepsNothing(t *testing.T) {
	c := useCache(t, maxCachedSchemaBytes)
	const n = 200
	problems := 0
	for i := range n {
		if SchemaProblem(distinctTool(i, true)) != nil {
			problems++
		}
	}
	if problems != n/10 {
		t.Errorf("SchemaProblem found %d problems in %d schemas, want %d", problems, n, n/10)
	}
	if held, bytes := c.size(); held != 0 {
		t.Fatalf("after SchemaProblem of %d tools the cache holds %d schemas (%d bytes), want none", n, held, bytes)
	}
	tool := distinctTool(7, true)
	if err := ValidateArguments(tool, json.RawMessage(`{"n":3}`)); !errors.Is(err, ErrArguments) {
		t.Fatalf("ValidateArguments = %v, want n below its minimum refused", err)
	}
	if held, _ := c.size(); held != 1 {
		t.Fatalf("after one call the cache holds %d schemas, want its tool's", held)
	}
	if err := SchemaProblem(tool); err != nil {
		t.Fatalf("SchemaProblem of a called tool = %v, want none", err)
	}
	if held, _ := c.size(); held != 1 {
		t.Fatalf("after SchemaProblem of a called tool the cache holds %d schemas, want 1", held)
	}
}

// TestSchemaCacheBounded checks that compiling many more distinct schemas than the
// cache can hold keeps it within its bound at every step, that the least recently used
// go first, and that every call is still checked.
func TestSchemaCacheBounded(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int
	}{
		{"the bound toolshed uses", maxCachedSchemaBytes},
		{"a small bound", 32 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := useCache(t, tt.maxBytes)
			hot := distinctTool(-1, false)
			hotSchema := schemaOf(hot).sch
			per := schemaCharge(hot.InputSchema)
			n := 3 * tt.maxBytes / per // three times what fits
			for i := range n {
				tool := distinctTool(i, true)
				err := ValidateArguments(tool, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i-1)))
				if broken := i%10 == 0; broken != (err == nil) {
					t.Fatalf("ValidateArguments of tool %d = %v, want an error unless its schema cannot be compiled", i, err)
				}
				if i%10 == 0 {
					checkCache(t, c)
					if got := schemaOf(hot).sch; got != hotSchema {
						t.Fatalf("after %d schemas, the schema used every 10 calls was compiled again", i)
					}
				}
			}
			checkCache(t, c)
			held, bytes := c.size()
			if held < tt.maxBytes/per/2 {
				t.Errorf("the cache holds %d schemas (%d bytes) of a bound of %d bytes, want about %d", held, bytes, tt.maxBytes, tt.maxBytes/per)
			}
			if _, ok := c.peek(schemaKey(distinctTool(1, true).InputSchema)); ok {
				t.Errorf("the first schema used once is still held after %d others", n)
			}
			if _, ok := c.peek(schemaKey(distinctTool(n-1, true).InputSchema)); !ok {
				t.Errorf("the last schema used is not held")
			}
		})
	}
}

// TestSchemaCacheLargeSchema checks that a schema larger than the whole bound is used
// but not kept, and leaves the others in place.
func TestSchemaCacheLargeSchema(t *testing.T) {
	c := useCache(t, 4<<10)
	small := distinctTool(1, false)
	schemaOf(small)
	props := make([]string, 200)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	large := &catalog.Tool{Qualified: "s__large", InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)}
	if err := ValidateArguments(large, json.RawMessage(`{"p7":1}`)); !errors.Is(err, ErrArguments) {
		t.Fatalf("ValidateArguments of the large schema = %v, want p7 refused", err)
	}
	checkCache(t, c)
	if held, _ := c.size(); held != 1 {
		t.Fatalf("the cache holds %d schemas, want the small one alone", held)
	}
}

// TestSchemaCacheHit checks that a hit returns the schema compiled first, for the same
// tool and for another with the same schema bytes.
func TestSchemaCacheHit(t *testing.T) {
	useCache(t, maxCachedSchemaBytes)
	a, b := distinctTool(5, false), distinctTool(5, false)
	b.Qualified = "other__t5"
	first := schemaOf(a)
	if first.sch == nil || first.quick == nil {
		t.Fatalf("schemaOf = %+v, want a compiled schema with a quick form", first)
	}
	for _, tool := range []*catalog.Tool{a, b, a} {
		if got := schemaOf(tool); got.sch != first.sch || got.quick != first.quick {
			t.Fatalf("schemaOf(%s) compiled its schema again", tool.Qualified)
		}
	}
}

// TestSchemaCacheConcurrent has calls of overlapping tools race through a cache too
// small for them (run it under -race): every call is checked as it would be alone,
// and the cache stays within its bound.
func TestSchemaCacheConcurrent(t *testing.T) {
	c := useCache(t, 8<<10)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 300 {
				i := (g*37 + j) % 120
				tool := distinctTool(i, true)
				err := ValidateArguments(tool, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+j%2-1)))
				if want := i%10 != 0 && j%2 == 0; want != (err != nil) {
					errs <- fmt.Errorf("ValidateArguments of tool %d with n=%d = %v", i, i+j%2-1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkCache(t, c)
}

// TestSchemaChecker checks that a SchemaChecker gives SchemaProblem's verdicts,
// compiles each distinct schema once (a schema it has seen, under another tool, costs
// no allocation: nothing compiled) and keeps no compiled schema.
func TestSchemaChecker(t *testing.T) {
	c := useCache(t, maxCachedSchemaBytes)
	var checker SchemaChecker
	for i := range 60 {
		for _, server := range []string{"a", "b", "c"} {
			tool := distinctTool(i, true)
			tool.Qualified = server + "__" + tool.Qualified
			got, want := checker.Problem(tool), SchemaProblem(tool)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("Problem(%s) = %v, want %v as SchemaProblem says", tool.Qualified, got, want)
			}
		}
	}
	for _, i := range []int{7, 10} { // a schema that compiles and one that does not
		again := distinctTool(i, true)
		if allocs := testing.AllocsPerRun(20, func() { checker.Problem(again) }); allocs != 0 {
			t.Errorf("Problem of a schema already checked made %.0f allocations, want none: it compiled the schema again", allocs)
		}
	}
	if held, _ := c.size(); held != 0 {
		t.Errorf("after checking 60 schemas the cache holds %d, want none", held)
	}
}

// BenchmarkSchemaHit is the cost of finding a call's compiled schema in the cache: the
// hash of its bytes and the look-up, alone (serial) and from every core at once.
func BenchmarkSchemaHit(b *testing.B) {
	tool := &catalog.Tool{Qualified: "github__create_issue", InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner"},"repo":{"type":"string","description":"Repository name"},"title":{"type":"string"},"body":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"perPage":{"type":"number","minimum":1,"maximum":100}},"required":["owner","repo","title"]}`)}
	if schemaOf(tool).sch == nil {
		b.Fatal("not compiled")
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			schemaOf(tool)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				schemaOf(tool)
			}
		})
	})
}
