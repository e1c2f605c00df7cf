package gateway

import (
	"encoding/json"
	"testing"
)

// TestRedactArguments checks that the activity log hides the values of the config's
// secret fields, at any depth and in any case, with the mask every other place that
// hides a secret uses (redact.Mask), and hides nothing else.
func TestRedactArguments(t *testing.T) {
	secrets := map[string]bool{"password": true, "token": true}
	for _, tc := range []struct {
		name, in, want string
		secrets        map[string]bool
	}{
		{"top level", `{"user":"ann","password":"hunter2"}`, `{"password":"xxxxx","user":"ann"}`, secrets},
		{"nested and in a list", `{"db":{"Password":"hunter2"},"list":[{"TOKEN":{"a":1}}]}`, `{"db":{"Password":"xxxxx"},"list":[{"TOKEN":"xxxxx"}]}`, secrets},
		{"names not configured kept", `{"api_key":"k1","secret":"s1"}`, `{"api_key":"k1","secret":"s1"}`, secrets},
		{"no secret fields: as sent", `{"password":"hunter2", "n":1.50}`, `{"password":"hunter2", "n":1.50}`, nil},
		{"numbers kept", `{"n":1.50,"big":12345678901234567890}`, `{"big":12345678901234567890,"n":1.50}`, secrets},
		{"not JSON", `{"password":`, `"[not JSON]"`, secrets},
		{"empty", ` `, ``, secrets},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redactArguments(json.RawMessage(tc.in), tc.secrets)
			if string(got) != tc.want {
				t.Errorf("redactArguments(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
