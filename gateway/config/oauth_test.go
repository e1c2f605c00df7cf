package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestOAuth(t *testing.T) {
	t.Setenv("TEST_INTRO_SECRET", "s3cret")
	good := `
oauth:
  issuer: https://login.example.com/realms/eng
  resource: https://toolshed.example.com/mcp
  scopes: mcp:read
  introspection: {client_id: toolshed, client_secret: "${TEST_INTRO_SECRET}"}
  subjects: hash
profiles:
  platform: {servers: [github], claims: {groups: [platform, sre], scope: mcp:platform}}
`
	cfg, _, err := parse([]byte(good), "toolshed.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.OAuth
	if !o.Enabled() || o.Issuer != "https://login.example.com/realms/eng" || o.Resource != "https://toolshed.example.com/mcp" ||
		!slices.Equal(o.Scopes, []string{"mcp:read"}) || o.IntrospectionClientID != "toolshed" || o.IntrospectionClientSecret != "s3cret" || o.Subjects != "hash" {
		t.Errorf("oauth = %+v", o)
	}
	c := cfg.Profiles["platform"].Claims
	if !slices.Equal(c["groups"], []string{"platform", "sre"}) || !slices.Equal(c["scope"], []string{"mcp:platform"}) {
		t.Errorf("claims = %v", c)
	}

	for _, tt := range []struct{ yaml, want string }{
		{"oauth: {resource: https://t/mcp}\n", "oauth.issuer: is missing"},
		{"oauth: {issuer: https://l}\n", "oauth.resource: is missing"},
		{"oauth: {issuer: https://l, resource: https://t/mcp, subjects: sha1}\n", "use plain, hash or off"},
		{"oauth: {issuer: https://l, resource: https://t/mcp, scope: x}\n", "oauth.scope: unknown setting"},
		{"oauth: {issuer: https://l, resource: https://t/mcp, introspection: {secret: x}}\n", "introspection takes client_id and client_secret"},
		{"oauth: https://l\n", "not a mapping"},
	} {
		_, _, err := parse([]byte(tt.yaml), "toolshed.yaml", "")
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error saying %q", tt.yaml, err, tt.want)
		}
	}
	_, warns, err := parse([]byte("profiles: {a: {claims: [groups]}}\n"), "toolshed.yaml", "")
	if err != nil || len(warns) == 0 || !strings.Contains(warns[0].String(), "not a mapping from claim to values") {
		t.Errorf("claims as a list: %v, %v", warns, err)
	}
}
