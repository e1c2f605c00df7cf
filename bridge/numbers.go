package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// errUnreadableNumber is wrapped by validate's error when the validator could not read a
// number of the arguments.
var errUnreadableNumber = errors.New("a number is beyond what the validator can compare")

// validate is sch.Validate, except that it turns the validator's panic on a number it
// cannot read into an error. The validator compares numbers as big.Rat, and math/big
// refuses exponents beyond about a million (1e1000001), leaving a nil that the
// validator then dereferences. The MCP SDK does not recover a tool handler's panic: over
// HTTP net/http drops the request (with a stack trace in the log), and over stdio one
// call would end the gateway.
func validate(sch *jsonschema.Schema, doc any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var at []string
			unreadableNumbers(doc, "", &at)
			if len(at) == 0 {
				panic(r) // not a number: a defect of its own, not to be hidden
			}
			sort.Strings(at)
			err = fmt.Errorf("%w: %s", errUnreadableNumber, strings.Join(at, "; "))
		}
	}()
	return sch.Validate(doc)
}

// unreadableNumbers appends where v holds a number that big.Rat cannot read, as
// "at /pointer: 1e1000001".
func unreadableNumbers(v any, at string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			unreadableNumbers(e, at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), out)
		}
	case []any:
		for i, e := range v {
			unreadableNumbers(e, at+"/"+strconv.Itoa(i), out)
		}
	case json.Number:
		if strings.ContainsAny(string(v), "eE") || len(v) > 1000 {
			if _, ok := new(big.Rat).SetString(string(v)); !ok {
				*out = append(*out, fmt.Sprintf("at %s: %s", at, v))
			}
		}
	}
}
