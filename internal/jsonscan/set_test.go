package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestSetMembers(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		set  []Member
		want string
	}{
		{`{}`, []Member{{Key: "a", Value: json.RawMessage("1")}}, `{"a":1}`},
		{`{ }`, []Member{{Key: "a", Value: json.RawMessage("1")}}, `{"a":1 }`},
		{`{"a":1,"a":2}`, []Member{{Key: "a", Value: json.RawMessage("3")}}, `{"a":3,"a":3}`},
		{"{\"b\":\"}\"\n}", []Member{{Key: "a", Value: json.RawMessage("1")}}, "{\"b\":\"}\",\"a\":1\n}"},
		{`{"b":{"a":1}}`, []Member{{Key: "a", Value: json.RawMessage("2")}}, `{"b":{"a":1},"a":2}`},
		{`[1]`, []Member{{Key: "a", Value: json.RawMessage("2")}}, `[1]`},
	} {
		if got := SetMembers([]byte(tc.obj), tc.set...); string(got) != tc.want {
			t.Errorf("SetMembers(%s) = %s, want %s", tc.obj, got, tc.want)
		}
	}
}
