package config

import (
	"reflect"
	"testing"
)

// TestOAuthForms reads the oauth settings of the clients whose configs toolshed
// takes as they are.
func TestOAuthForms(t *testing.T) {
	t.Setenv("OAUTH_TEST_SECRET", "s3cret")
	tests := []struct {
		name, src string
		want      *SignIn
	}{
		{"none", `{"url": "https://x/mcp"}`, nil},
		{"Claude Code", `{"url": "https://x/mcp", "oauth": {"clientId": "abc", "callbackPort": 8080}}`, &SignIn{ClientID: "abc", CallbackPort: 8080}},
		{"client secret from the environment", `{"url": "https://x/mcp", "oauth": {"clientId": "abc", "clientSecret": "${OAUTH_TEST_SECRET}", "scopes": ["read", "write"]}}`, &SignIn{ClientID: "abc", ClientSecret: "s3cret", Scopes: []string{"read", "write"}}},
		{"Gemini CLI", `{"httpUrl": "https://x/mcp", "authProviderType": "dynamic_discovery", "oauth": {"enabled": true, "clientId": "g", "redirectUri": "http://localhost:7777/oauth/callback", "scopes": ["a"]}}`, &SignIn{ClientID: "g", RedirectURI: "http://localhost:7777/oauth/callback", Scopes: []string{"a"}}},
		{"Gemini CLI disabled", `{"httpUrl": "https://x/mcp", "oauth": {"enabled": false}}`, &SignIn{Disabled: true}},
		{"Cursor", `{"url": "https://x/mcp", "auth": {"CLIENT_ID": "c", "CLIENT_SECRET": "d", "scopes": ["r"]}}`, &SignIn{ClientID: "c", ClientSecret: "d", Scopes: []string{"r"}}},
		{"Hermes", "{url: \"https://x/mcp\", auth: oauth}", &SignIn{}},
		{"off", `{"url": "https://x/mcp", "oauth": false}`, &SignIn{Disabled: true}},
		{"scope as one string", `{"url": "https://x/mcp", "oauth": {"scope": "a b"}}`, &SignIn{Scopes: []string{"a", "b"}}},
		{"client metadata document", `{"url": "https://x/mcp", "oauth": {"clientMetadataUrl": "https://me.example/toolshed.json"}}`, &SignIn{ClientMetadataURL: "https://me.example/toolshed.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, `{"mcpServers": {"s": `+tt.src+`}}`)
			wantNoWarnings(t, warns)
			if got := server(t, cfg, "s").OAuth; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
