package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEmbed(t *testing.T) {
	t.Setenv("TS_EMBED", "http://gpu.internal:11434/api/embed")
	ok := []struct {
		name, src string
		want      Embed
	}{
		{"full", `{url: "${TS_EMBED}", model: nomic-embed-text, dimensions: 512, query_prefix: "search_query: ", document_prefix: "search_document: ", query_timeout: 2s, api_key_env: MY_KEY}`,
			Embed{URL: "http://gpu.internal:11434/api/embed", Model: "nomic-embed-text", Dimensions: 512, QueryPrefix: "search_query: ", DocumentPrefix: "search_document: ", QueryTimeout: 2 * time.Second, APIKeyEnv: "MY_KEY"}},
		{"minimal", `{url: "http://localhost:8000/v1", model: bge}`, Embed{URL: "http://localhost:8000/v1", Model: "bge", APIKeyEnv: "TOOLSHED_EMBED_API_KEY"}},
		{"empty", ``, Embed{APIKeyEnv: "TOOLSHED_EMBED_API_KEY"}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "embed: "+tt.src+"\n")
			wantNoWarnings(t, warns)
			if tt.name == "empty" {
				tt.want = Embed{} // a null section is no section
			}
			if !reflect.DeepEqual(cfg.Embed, tt.want) {
				t.Errorf("embed = %#v\nwant    %#v", cfg.Embed, tt.want)
			}
		})
	}
	bad := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", `{url: "http://x/api/embed", model: m, modle: m}`, []string{"embed.modle: unknown key", "embed takes url, model, dimensions"}},
		{"the key itself", `{url: "http://x/api/embed", model: m, api_key: sk-123}`, []string{"embed.api_key: the key never goes in the file", "api_key_env"}},
		{"url without model", `{url: "http://x/api/embed"}`, []string{"needs both url and model"}},
		{"settings without url", `{dimensions: 256}`, []string{"no url and model", "remove the section"}},
		{"not http", `{url: "localhost:11434", model: m}`, []string{"embed.url:"}},
		{"bad dimensions", `{url: "http://x/api/embed", model: m, dimensions: -3}`, []string{"embed.dimensions", "from 0"}},
		{"too many dimensions", `{url: "http://x/api/embed", model: m, dimensions: 131072}`, []string{"embed.dimensions", "to 8192, the most toolshed keeps"}},
		{"key in the url shown hidden", `{url: "ftp://x/api/embed?key=s3cret-k", model: m}`, []string{"embed.url", "key=xxxxx"}},
		{"bad timeout", `{url: "http://x/api/embed", model: m, query_timeout: soon}`, []string{"embed.query_timeout", "such as 300ms"}},
		{"zero timeout", `{url: "http://x/api/embed", model: m, query_timeout: 0s}`, []string{"embed.query_timeout", "not positive"}},
		{"bad env name", `{url: "http://x/api/embed", model: m, api_key_env: "sk-123"}`, []string{"embed.api_key_env", "not the name of an environment variable"}},
		{"not a mapping", `[a]`, []string{"embed is a list, not a mapping"}},
		{"model a list", `{url: "http://x/api/embed", model: [a]}`, []string{"embed.model: is a list; write a string"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte("embed: "+tt.src+"\n"), "test.yaml")
			if err == nil || !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want an ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "sk-123") && tt.name == "the key itself" {
				t.Errorf("the error repeats the key: %v", err)
			}
		})
	}
}
