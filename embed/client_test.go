package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/internal/embedtest"
)

func newClient(t *testing.T, opts embed.Options) *embed.Client {
	t.Helper()
	c, err := embed.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientFormats(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	for _, tc := range []struct {
		name, path string
		format     embed.Format
		wantPath   string
	}{
		{"openai full path", "/v1/embeddings", embed.FormatOpenAI, "/v1/embeddings"},
		{"openai base /v1", "/v1", embed.FormatOpenAI, "/v1/embeddings"},
		{"ollama", "/api/embed", embed.FormatOllama, "/api/embed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Reset()
			t.Setenv(embed.APIKeyEnv, "sk-test")
			c := newClient(t, embed.Options{URL: srv.URL + tc.path, Model: embedtest.Model, DocumentPrefix: "doc: "})
			if c.Format() != tc.format {
				t.Fatalf("format %q, want %q", c.Format(), tc.format)
			}
			got, err := c.Documents(context.Background(), []string{"take a photo", "send mail"})
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range []string{"doc: take a photo", "doc: send mail"} {
				want := embedtest.Vector(text, embedtest.Dim)
				if len(got[i]) != len(want) {
					t.Fatalf("vector %d: %d dims, want %d", i, len(got[i]), len(want))
				}
				for j := range want {
					if math.Abs(float64(got[i][j])-want[j]) > 1e-6 {
						t.Fatalf("vector %d differs at %d: %v vs %v", i, j, got[i][j], want[j])
					}
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Path != tc.wantPath || reqs[0].Authorization != "Bearer sk-test" {
				t.Fatalf("requests = %+v", reqs)
			}
			var body map[string]any
			json.Unmarshal([]byte(reqs[0].Raw), &body)
			if body["model"] != embedtest.Model || len(body["input"].([]any)) != 2 {
				t.Errorf("request body %s", reqs[0].Raw)
			}
			if _, has := body["encoding_format"]; has != (tc.format == embed.FormatOpenAI) {
				t.Errorf("encoding_format present=%v in %s format: %s", has, tc.format, reqs[0].Raw)
			}
		})
	}
}

func TestClientQueryPrefixAndDimensions(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	c := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, QueryPrefix: "search_query: ", Dimensions: 32})
	v, err := c.Query(context.Background(), "weather")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 32 {
		t.Fatalf("%d dims, want 32", len(v))
	}
	r := srv.Requests()[0]
	if r.Input[0] != "search_query: weather" || r.Dimensions != 32 || r.Authorization != "" {
		t.Fatalf("request %+v", r)
	}
}

func TestClientErrors(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	// A port nothing listens on: a closed listener's address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + l.Addr().String() + "/v1/embeddings"
	l.Close()
	garbage := func(body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		t.Cleanup(s.Close)
		return s.URL + "/v1/embeddings"
	}
	for _, tc := range []struct {
		name  string
		opts  embed.Options
		mode  embedtest.Mode
		want  error
		words string
	}{
		{"down", embed.Options{URL: down}, embedtest.Normal, embed.ErrUnavailable, "connect"},
		{"slow", embed.Options{URL: srv.URL + "/v1/embeddings", Timeout: 50 * time.Millisecond}, embedtest.Slow, embed.ErrTimeout, "timeout"},
		{"html", embed.Options{URL: srv.URL + "/v1/embeddings"}, embedtest.Garbage, embed.ErrBadResponse, "not a /v1/embeddings answer"},
		{"500", embed.Options{URL: srv.URL + "/api/embed"}, embedtest.Error, embed.ErrUnavailable, "the model crashed"},
		{"unknown model", embed.Options{URL: srv.URL + "/v1/embeddings", Model: "nope"}, embedtest.Normal, embed.ErrUnavailable, "does not exist"},
		{"wrong count", embed.Options{URL: garbage(`{"object":"list","data":[]}`)}, embedtest.Normal, embed.ErrBadResponse, "0 vectors for 1 inputs"},
		{"not numbers", embed.Options{URL: garbage(`{"data":[{"index":0,"embedding":[0.1,"x"]}]}`)}, embedtest.Normal, embed.ErrBadResponse, "embedding"},
		{"zero vector", embed.Options{URL: garbage(`{"data":[{"index":0,"embedding":[0,0]}]}`)}, embedtest.Normal, embed.ErrBadResponse, "all zeros"},
		{"bad index", embed.Options{URL: garbage(`{"data":[{"index":3,"embedding":[1,0]}]}`)}, embedtest.Normal, embed.ErrBadResponse, "index 3"},
		{"wrong dims", embed.Options{URL: garbage(`{"data":[{"index":0,"embedding":[1,0]}]}`), Dimensions: 8}, embedtest.Normal, embed.ErrBadResponse, "2 dimensions, want 8"},
		{"too many dims", embed.Options{URL: garbage(`{"data":[{"index":0,"embedding":[1` + strings.Repeat(",0", embed.MaxDimensions) + `]}]}`)}, embedtest.Normal, embed.ErrBadResponse, fmt.Sprintf("%d dimensions, more than the %d", embed.MaxDimensions+1, embed.MaxDimensions)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.SetMode(tc.mode, time.Second)
			defer srv.SetMode(embedtest.Normal, 0)
			if tc.opts.Model == "" {
				tc.opts.Model = embedtest.Model
			}
			c := newClient(t, tc.opts)
			_, err := c.Query(context.Background(), "hello")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.words) {
				t.Errorf("err %q does not say %q", err, tc.words)
			}
		})
	}
}

// TestClientTakesMaxDimensions: a vector of exactly MaxDimensions is taken; the cap
// refuses only longer ones.
func TestClientTakesMaxDimensions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"index":0,"embedding":[1` + strings.Repeat(",0", embed.MaxDimensions-1) + `]}]}`))
	}))
	defer srv.Close()
	v, err := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: "m"}).Query(context.Background(), "x")
	if err != nil || len(v) != embed.MaxDimensions {
		t.Fatalf("Query = %d dimensions, %v; want %d", len(v), err, embed.MaxDimensions)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []embed.Options{
		{Model: "m"},
		{URL: "http://localhost:1/v1/embeddings"},
		{URL: "localhost:11434", Model: "m"},
		{URL: "http://localhost:1/x", Model: "m", Format: "grpc"},
		{URL: "http://localhost:1/x", Model: "m", Dimensions: -1},
		{URL: "http://localhost:1/x", Model: "m", Dimensions: embed.MaxDimensions + 1},
	} {
		if _, err := embed.New(o); !errors.Is(err, embed.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", o, err)
		}
	}
}
