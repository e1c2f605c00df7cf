package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// TestValidateArgumentsHugeNumbers checks that numbers too large for the full validator
// to read cheaply (see maxNumberExponent) get a clear error that says where, rather than
// a panic (math/big gives up past an exponent of about a million, and the validator
// dereferences the nil it gets) or seconds of CPU (the cost grows with the exponent).
func TestValidateArgumentsHugeNumbers(t *testing.T) {
	tool := &catalog.Tool{Qualified: "t__bounded", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"number","minimum":0},"m":{"multipleOf":2},"l":{"type":"array","items":{"maximum":5}}}}`)}
	long := "1" + strings.Repeat("0", maxNumberLength)
	for _, tt := range []struct {
		args, at string // at is "" when the arguments are valid
	}{
		{`{"n":1e1000001}`, "/n"},
		{`{"n":-1E+99999999999999999999}`, "/n"},
		{`{"m":1e-1000001}`, "/m"},
		{`{"l":[1,2,1e1000001]}`, "/l/2"},
		{`{"x":1e401}`, "/x"}, // whether or not a keyword compares it
		{`{"n":` + long + `}`, "/n"},
		{`{"a~/b":[1e-401]}`, "/a~0~1b/0"},
		{`{"n":1e400,"m":4,"l":[1,2e0,-5e-400]}`, ""},
		{`{"n":1e300,"m":4,"l":[1,2e0]}`, ""},
	} {
		t.Run(tt.args[:min(len(tt.args), 40)], func(t *testing.T) {
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
