package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// TestValidateArgumentsHugeNumbers checks that a number the validator cannot read (its
// exponent is beyond what math/big parses) gets a clear error rather than a panic: the
// full validator compares numbers as big.Rat and dereferences the nil a failed parse
// leaves, and the MCP SDK does not recover a tool handler's panic.
func TestValidateArgumentsHugeNumbers(t *testing.T) {
	tool := &catalog.Tool{Qualified: "t__bounded", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"number","minimum":0},"m":{"multipleOf":2},"l":{"type":"array","items":{"maximum":5}}}}`)}
	for _, tt := range []struct {
		args, at string // at is "" when the arguments are valid
	}{
		{`{"n":1e1000001}`, "/n"},
		{`{"n":-1E+99999999999999999999}`, "/n"},
		{`{"m":1e-1000001}`, "/m"},
		{`{"l":[1,2,1e1000001]}`, "/l/2"},
		{`{"x":1e1000001}`, ""}, // no keyword compares it, so it stays valid
		{`{"n":1e300,"m":4,"l":[1,2e0]}`, ""},
	} {
		t.Run(tt.args, func(t *testing.T) {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("ValidateArguments(%s) panics: %v", tt.args, r)
					}
				}()
				return ValidateArguments(tool, json.RawMessage(tt.args))
			}()
			switch {
			case tt.at == "" && err != nil:
				t.Errorf("ValidateArguments(%s) = %v, want nil", tt.args, err)
			case tt.at != "" && (!errors.Is(err, ErrArguments) || !strings.Contains(err.Error(), "at "+tt.at+":")):
				t.Errorf("ValidateArguments(%s) = %v, want an error wrapping ErrArguments that says at %s", tt.args, err, tt.at)
			}
		})
	}
}
