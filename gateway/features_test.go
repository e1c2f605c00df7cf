package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// featureServer is a test upstream with the features behaviour, marked with its name.
func featureServer(name string) config.Server { return testServer(name, "features:"+name) }

// transport connects clients to a running gateway one way.
type transport struct {
	name string
	// versions are the protocol versions its clients can speak ("" for the default).
	versions []string
	connect  func(t *testing.T, profile string, opts *mcp.ClientOptions, version string) *mcp.ClientSession
}

// transports are the ways to reach h's gateway: in memory, and over Streamable HTTP
// (/mcp, or /mcp/{profile}).
func transports(t *testing.T, h *harness) []transport {
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	return []transport{
		{name: "memory", versions: protocols, connect: func(t *testing.T, profile string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
			return (&harness{t: t, g: h.g, log: h.log}).clientVersion(profile, opts, version)
		}},
		{name: "http", versions: httpProtocols, connect: func(t *testing.T, profile string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
			endpoint := url + "/mcp"
			if profile != "" {
				endpoint += "/" + profile
			}
			return httpClient(t, endpoint, nil, opts, version)
		}},
	}
}

func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var uris []string
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	return uris
}

func templateURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var uris []string
	for r, err := range cs.ResourceTemplates(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URITemplate)
	}
	sort.Strings(uris)
	return uris
}

// promptMessages renders a prompt's messages as "role: text".
func promptMessages(res *mcp.GetPromptResult) []string {
	var out []string
	for _, m := range res.Messages {
		text := fmt.Sprintf("%T", m.Content)
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			text = tc.Text
		}
		out = append(out, string(m.Role)+": "+text)
	}
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// Everything two features servers offer, as the default profile lists it.
var (
	allPrompts   = sorted("alpha__greet", "alpha__about_alpha", "beta__greet", "beta__about_beta")
	allResources = sorted("feat://alpha/readme", "feat://alpha/logo", "feat://beta/readme", "feat://beta/logo", "feat://shared/info")
	allTemplates = sorted("feat://alpha/items/{item}", "feat://beta/items/{item}")
)

func TestFeatures(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{featureServer("alpha"), featureServer("beta")},
		Profiles: map[string]config.Profile{
			"alpha-only": {Scope: policy.Scope{Servers: []string{"alpha"}}},
			// A prompt of another server can be granted by name, like a tool.
			"alpha-plus": {Scope: policy.Scope{Servers: []string{"alpha"}, Tools: []string{"beta__about_*"}}},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	admin := h.client("", nil) // calls the upstreams' tools
	trs := transports(t, h)
	t.Run("read", func(t *testing.T) {
		for _, tr := range trs {
			t.Run(tr.name+"/list", func(t *testing.T) {
				t.Parallel()
				testFeatureLists(t, tr.connect(t, "", nil, ""))
			})
			t.Run(tr.name+"/prompts/get", func(t *testing.T) {
				t.Parallel()
				testGetPrompt(t, tr.connect(t, "", nil, ""))
			})
			t.Run(tr.name+"/resources/read", func(t *testing.T) {
				t.Parallel()
				testReadResource(t, tr.connect(t, "", nil, ""))
			})
			t.Run(tr.name+"/completion/complete", func(t *testing.T) {
				t.Parallel()
				testComplete(t, tr.connect(t, "", nil, ""))
			})
			t.Run(tr.name+"/scope", func(t *testing.T) {
				t.Parallel()
				testFeatureScope(t, tr)
			})
			for _, version := range tr.versions {
				t.Run(tr.name+"/resources/subscribe/"+version, func(t *testing.T) {
					t.Parallel()
					testSubscribe(t, tr, version, admin)
				})
			}
		}
	})
	// Changes the lists, so after the rest.
	for _, tr := range trs {
		t.Run(tr.name+"/prompt added at run time", func(t *testing.T) { testPromptAdded(t, tr, admin) })
	}
}

func testFeatureLists(t *testing.T, cs *mcp.ClientSession) {
	if got := promptNames(t, cs); !slices.Equal(got, allPrompts) {
		t.Errorf("prompts/list = %v, want %v", got, allPrompts)
	}
	if got := resourceURIs(t, cs); !slices.Equal(got, allResources) {
		t.Errorf("resources/list = %v, want %v", got, allResources)
	}
	if got := templateURIs(t, cs); !slices.Equal(got, allTemplates) {
		t.Errorf("resources/templates/list = %v, want %v", got, allTemplates)
	}
	// Definitions are the upstream's, but for the name.
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != "beta__greet" {
			continue
		}
		if p.Description != "Greet someone." || len(p.Arguments) != 2 ||
			p.Arguments[0].Name != "name" || !p.Arguments[0].Required || p.Arguments[0].Description != "Who to greet" ||
			p.Arguments[1].Name != "style" || p.Arguments[1].Required {
			t.Errorf("beta__greet = %+v (arguments %+v %+v)", p, p.Arguments[0], p.Arguments[1])
		}
	}
	mime := map[string]string{}
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		mime[r.URI] = r.Name + " " + r.MIMEType
	}
	if mime["feat://alpha/logo"] != "logo image/png" || mime["feat://beta/readme"] != "readme text/plain" {
		t.Errorf("resource definitions %v", mime)
	}
}

func testGetPrompt(t *testing.T, cs *mcp.ClientSession) {
	for _, tc := range []struct {
		name    string
		args    map[string]string
		desc    string
		want    []string
		wantErr bool
	}{
		{name: "alpha__greet", args: map[string]string{"name": "Ada", "style": "formal"}, desc: "greeting from alpha",
			want: []string{"user: Greet Ada in a formal style (alpha)", "assistant: Hello, Ada!"}},
		{name: "beta__greet", args: map[string]string{"name": "Grace", "style": "warm"}, desc: "greeting from beta",
			want: []string{"user: Greet Grace in a warm style (beta)", "assistant: Hello, Grace!"}},
		{name: "beta__about_beta", want: []string{"user: about beta"}},
		{name: "greet", args: map[string]string{"name": "Ada"}, wantErr: true}, // qualified names only
		{name: "alpha__nosuch", wantErr: true},
		{name: "gamma__greet", args: map[string]string{"name": "Ada"}, wantErr: true},
	} {
		res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
		if tc.wantErr {
			if err == nil {
				t.Errorf("prompts/get %s = %+v, want an error", tc.name, res)
			}
			continue
		}
		if err != nil {
			t.Errorf("prompts/get %s: %v", tc.name, err)
			continue
		}
		if got := promptMessages(res); !slices.Equal(got, tc.want) || res.Description != tc.desc {
			t.Errorf("prompts/get %s = %q %q, want %q %q", tc.name, res.Description, got, tc.desc, tc.want)
		}
	}
}

func testReadResource(t *testing.T, cs *mcp.ClientSession) {
	for _, tc := range []struct {
		uri     string
		mime    string
		text    string
		blob    []byte
		wantErr bool
	}{
		{uri: "feat://alpha/readme", mime: "text/plain", text: "readme of alpha"},
		{uri: "feat://beta/readme", mime: "text/plain", text: "readme of beta"},
		{uri: "feat://alpha/logo", mime: "image/png", blob: featureBlob("alpha")},
		{uri: "feat://beta/logo", mime: "image/png", blob: featureBlob("beta")},
		// Two servers list it: the first one in the config owns it.
		{uri: "feat://shared/info", mime: "text/plain", text: "shared info from alpha"},
		// Through a template, to the template's server.
		{uri: "feat://alpha/items/42", mime: "text/plain", text: "item 42 of alpha"},
		{uri: "feat://beta/items/x-y", mime: "text/plain", text: "item x-y of beta"},
		{uri: "feat://gamma/readme", wantErr: true},
		{uri: "feat://alpha/nothing", wantErr: true},
	} {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: tc.uri})
		if tc.wantErr {
			if err == nil {
				t.Errorf("resources/read %s = %+v, want an error", tc.uri, res)
			}
			continue
		}
		if err != nil {
			t.Errorf("resources/read %s: %v", tc.uri, err)
			continue
		}
		if len(res.Contents) != 1 {
			t.Errorf("resources/read %s = %d contents", tc.uri, len(res.Contents))
			continue
		}
		c := res.Contents[0]
		if c.URI != tc.uri || c.MIMEType != tc.mime || c.Text != tc.text || !bytes.Equal(c.Blob, tc.blob) {
			t.Errorf("resources/read %s = %+v, want %s %q %q", tc.uri, c, tc.mime, tc.text, tc.blob)
		}
	}
}

func testComplete(t *testing.T, cs *mcp.ClientSession) {
	for _, tc := range []struct {
		ref     mcp.CompleteReference
		arg     string
		value   string
		want    []string
		wantErr bool
	}{
		{ref: mcp.CompleteReference{Type: "ref/prompt", Name: "alpha__greet"}, arg: "name", value: "A", want: []string{"Ada@alpha", "Alan@alpha"}},
		{ref: mcp.CompleteReference{Type: "ref/prompt", Name: "beta__greet"}, arg: "name", value: "G", want: []string{"Grace@beta"}},
		{ref: mcp.CompleteReference{Type: "ref/prompt", Name: "beta__greet"}, arg: "name", value: "Z", want: []string{}},
		{ref: mcp.CompleteReference{Type: "ref/resource", URI: "feat://beta/items/{item}"}, arg: "item", value: "ap", want: []string{"apple@beta", "apricot@beta"}},
		{ref: mcp.CompleteReference{Type: "ref/resource", URI: "feat://alpha/items/{item}"}, arg: "item", value: "b", want: []string{"banana@alpha"}},
		{ref: mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, arg: "name", value: "A", wantErr: true},
		{ref: mcp.CompleteReference{Type: "ref/prompt", Name: "alpha__about_alpha"}, arg: "topic", value: "", wantErr: true}, // the upstream's error
		{ref: mcp.CompleteReference{Type: "ref/resource", URI: "feat://gamma/items/{item}"}, arg: "item", value: "a", wantErr: true},
	} {
		ref := tc.ref
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value}})
		what := fmt.Sprintf("completion/complete %s %s%s %s=%q", tc.ref.Type, tc.ref.Name, tc.ref.URI, tc.arg, tc.value)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s = %+v, want an error", what, res)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if !slices.Equal(res.Completion.Values, tc.want) || res.Completion.Total != len(tc.want) {
			t.Errorf("%s = %+v, want %v", what, res.Completion, tc.want)
		}
	}
}

// testFeatureScope checks that a profile lists and serves only its scope's prompts and
// resources, and refuses the others as if they did not exist.
func testFeatureScope(t *testing.T, tr transport) {
	for _, tc := range []struct {
		profile   string
		prompts   []string
		resources []string
		templates []string
	}{
		{"alpha-only", sorted("alpha__greet", "alpha__about_alpha"),
			sorted("feat://alpha/readme", "feat://alpha/logo", "feat://shared/info"), []string{"feat://alpha/items/{item}"}},
		{"alpha-plus", sorted("alpha__greet", "alpha__about_alpha", "beta__about_beta"),
			sorted("feat://alpha/readme", "feat://alpha/logo", "feat://shared/info"), []string{"feat://alpha/items/{item}"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			// The older protocol, where resources/subscribe answers at once.
			cs := tr.connect(t, tc.profile, nil, "2025-11-25")
			if got := promptNames(t, cs); !slices.Equal(got, tc.prompts) {
				t.Errorf("prompts/list = %v, want %v", got, tc.prompts)
			}
			if got := resourceURIs(t, cs); !slices.Equal(got, tc.resources) {
				t.Errorf("resources/list = %v, want %v", got, tc.resources)
			}
			if got := templateURIs(t, cs); !slices.Equal(got, tc.templates) {
				t.Errorf("resources/templates/list = %v, want %v", got, tc.templates)
			}
			ctx := context.Background()
			if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"name": "Ada"}}); err != nil || len(res.Messages) != 2 {
				t.Errorf("prompts/get alpha__greet in scope = %+v, %v", res, err)
			}
			if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "feat://shared/info"}); err != nil || res.Contents[0].Text != "shared info from alpha" {
				t.Errorf("resources/read feat://shared/info in scope = %+v, %v", res, err)
			}
			if has(tc.prompts, "beta__about_beta") {
				if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__about_beta"}); err != nil || !slices.Equal(promptMessages(res), []string{"user: about beta"}) {
					t.Errorf("prompts/get beta__about_beta, granted by name = %+v, %v", res, err)
				}
			}
			if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__greet", Arguments: map[string]string{"name": "Ada"}}); err == nil {
				t.Errorf("prompts/get beta__greet out of scope = %+v", res)
			}
			for _, uri := range []string{"feat://beta/readme", "feat://beta/logo", "feat://beta/items/1"} {
				if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
					t.Errorf("resources/read %s out of scope = %+v", uri, res)
				}
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
					t.Errorf("resources/subscribe %s out of scope succeeded", uri)
				}
			}
			for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "beta__greet"}, {Type: "ref/resource", URI: "feat://beta/items/{item}"}} {
				arg := "name"
				if ref.URI != "" {
					arg = "item"
				}
				if res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: "a"}}); err == nil {
					t.Errorf("completion/complete %+v out of scope = %+v", ref, res.Completion)
				}
			}
		})
	}
}

// updates counts the notifications/resources/updated a client got, by URI.
type updates struct {
	mu sync.Mutex
	n  map[string]int
}

func (u *updates) options() *mcp.ClientOptions {
	u.n = map[string]int{}
	return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.n[req.Params.URI]++
	}}
}

func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n[uri]
}

// upstreamSubscriptions returns the URIs a features server is subscribed to.
func upstreamSubscriptions(t *testing.T, admin *mcp.ClientSession, server string) []string {
	t.Helper()
	return strings.Split(resultText(call(t, admin, server+"__subscriptions", map[string]any{})), ",")
}

func touch(t *testing.T, admin *mcp.ClientSession, server, uri string) {
	t.Helper()
	if res := call(t, admin, server+"__touch", map[string]any{"uri": uri}); resultText(res) != "touched "+uri {
		t.Fatalf("%s__touch %s = %+v", server, uri, res)
	}
}

// testSubscribe subscribes two clients to a resource each (through templates, so that
// every subtest has its own URIs) and checks that updates reach only their subscribers,
// and that the upstream subscription lasts as long as a client is subscribed.
func testSubscribe(t *testing.T, tr transport, version string, admin *mcp.ClientSession) {
	ctx := context.Background()
	id := tr.name + "-" + version
	x, y := "feat://alpha/items/sub-"+id+"-x", "feat://beta/items/sub-"+id+"-y"
	var ua, ub updates
	a := tr.connect(t, "", ua.options(), version)
	b := tr.connect(t, "", ub.options(), version)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: x}); err != nil {
		t.Fatalf("subscribing to %s: %v", x, err)
	}
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: y}); err != nil {
		t.Fatalf("subscribing to %s: %v", y, err)
	}
	// Subscribing may complete after Subscribe returns (with 2026-07-28, it is a
	// subscriptions/listen stream): touch until the update arrives.
	waitFor(t, "a's update of "+x, func() bool { touch(t, admin, "alpha", x); return ua.count(x) > 0 })
	waitFor(t, "b's update of "+y, func() bool { touch(t, admin, "beta", y); return ub.count(y) > 0 })
	if n := ub.count(x); n != 0 {
		t.Errorf("b got %d updates of %s, which it did not subscribe to", n, x)
	}
	if n := ua.count(y); n != 0 {
		t.Errorf("a got %d updates of %s, which it did not subscribe to", n, y)
	}
	// Each subscription went to its resource's server.
	if subs := upstreamSubscriptions(t, admin, "alpha"); !has(subs, x) || has(subs, y) {
		t.Errorf("alpha is subscribed to %v", subs)
	}
	if subs := upstreamSubscriptions(t, admin, "beta"); !has(subs, y) || has(subs, x) {
		t.Errorf("beta is subscribed to %v", subs)
	}

	// b subscribes to x too; the upstream subscription lasts until both leave.
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: x}); err != nil {
		t.Fatalf("subscribing b to %s: %v", x, err)
	}
	waitFor(t, "b's update of "+x, func() bool { touch(t, admin, "alpha", x); return ub.count(x) > 0 })
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: x}); err != nil {
		t.Fatalf("unsubscribing a from %s: %v", x, err)
	}
	if version != "2026-07-28" { // there, unsubscribing completes later
		if subs := upstreamSubscriptions(t, admin, "alpha"); !has(subs, x) {
			t.Errorf("alpha's subscription to %s ended while b is subscribed: %v", x, subs)
		}
		before := ub.count(x)
		waitFor(t, "b's next update of "+x, func() bool { touch(t, admin, "alpha", x); return ub.count(x) > before })
	}
	if err := b.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: x}); err != nil {
		t.Fatalf("unsubscribing b from %s: %v", x, err)
	}
	// The upstream subscription ends with the last client's, whatever the protocol
	// (with 2026-07-28 the SDK unsubscribes once the listen request has ended).
	waitFor(t, "alpha's subscription to "+x+" to end", func() bool { return !has(upstreamSubscriptions(t, admin, "alpha"), x) })
	if subs := upstreamSubscriptions(t, admin, "beta"); !has(subs, y) {
		t.Errorf("beta's subscription to %s ended with another: %v", y, subs)
	}
}

// testPromptAdded checks that a prompt an upstream adds at run time reaches clients,
// with notifications/prompts/list_changed.
func testPromptAdded(t *testing.T, tr transport, admin *mcp.ClientSession) {
	var mu sync.Mutex
	changed := 0
	cs := tr.connect(t, "", &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		mu.Lock()
		changed++
		mu.Unlock()
	}}, "")
	// The client may not listen for changes yet right after connecting: add prompts
	// until a change reaches it.
	var added []string
	waitFor(t, "notifications/prompts/list_changed", func() bool {
		name := fmt.Sprintf("fresh_%s_%d", tr.name, len(added))
		if res := call(t, admin, "beta__add_prompt", map[string]any{"name": name}); resultText(res) != "added "+name {
			t.Fatalf("add_prompt = %+v", res)
		}
		added = append(added, name)
		mu.Lock()
		defer mu.Unlock()
		return changed > 0
	})
	want := "beta__" + added[0]
	waitFor(t, want+" in prompts/list", func() bool { return has(promptNames(t, cs), want) })
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: want})
	if err != nil || !slices.Equal(promptMessages(res), []string{"user: " + added[0] + " of beta"}) {
		t.Errorf("prompts/get %s = %+v, %v", want, res, err)
	}
	// The upstream adds the same prompt again and says its list changed, though it
	// reads as before (as the conformance suite's test_trigger_prompt_change does at
	// each call): the client is told too.
	last := "beta__" + added[len(added)-1]
	waitFor(t, last+" in prompts/list", func() bool { return has(promptNames(t, cs), last) })
	mu.Lock()
	before := changed
	mu.Unlock()
	call(t, admin, "beta__add_prompt", map[string]any{"name": added[0]})
	waitFor(t, "notifications/prompts/list_changed after an unchanged list", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changed > before
	})
}

func TestFeaturesNoPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		servers []string
		prompts []string
		get     map[string]string // prompt -> its first message
		complet map[string]string // prompt -> the first completion of its name argument
	}{
		{name: "unambiguous", servers: []string{"solo"},
			prompts: sorted("greet", "about_solo"),
			get:     map[string]string{"greet": "user: Greet Ada in a  style (solo)", "about_solo": "user: about solo"},
			complet: map[string]string{"greet": "Ada@solo"}},
		{name: "shared name", servers: []string{"alpha", "beta"},
			prompts: sorted("alpha__greet", "beta__greet", "about_alpha", "about_beta"),
			get: map[string]string{"alpha__greet": "user: Greet Ada in a  style (alpha)", "beta__greet": "user: Greet Ada in a  style (beta)",
				"about_alpha": "user: about alpha", "about_beta": "user: about beta"},
			complet: map[string]string{"alpha__greet": "Ada@alpha", "beta__greet": "Ada@beta"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var servers []config.Server
			for _, s := range tc.servers {
				servers = append(servers, featureServer(s))
			}
			h := startGateway(t, &config.Config{Servers: servers}, gateway.Options{Mode: policy.Off, NoPrefix: true})
			for _, tr := range transports(t, h) {
				t.Run(tr.name, func(t *testing.T) {
					cs := tr.connect(t, "", nil, "")
					if got := promptNames(t, cs); !slices.Equal(got, tc.prompts) {
						t.Errorf("prompts/list = %v, want %v", got, tc.prompts)
					}
					for name, want := range tc.get {
						res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"name": "Ada"}})
						if err != nil || len(res.Messages) == 0 || promptMessages(res)[0] != want {
							t.Errorf("prompts/get %s = %+v, %v; want %q first", name, res, err, want)
						}
					}
					for name, want := range tc.complet {
						res, err := cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: name},
							Argument: mcp.CompleteParamsArgument{Name: "name", Value: "Ad"}})
						if err != nil || !slices.Equal(res.Completion.Values, []string{want}) {
							t.Errorf("completion/complete %s = %+v, %v; want %s", name, res, err, want)
						}
					}
					// Resources keep their URIs.
					if got := resourceURIs(t, cs); !has(got, "feat://"+tc.servers[0]+"/readme") {
						t.Errorf("resources/list = %v", got)
					}
				})
			}
		})
	}
}

// TestFeaturesRestart crashes one of two upstreams: its prompts, resources and templates
// leave every client's lists while it is down, and come back when it is restarted.
func TestFeaturesRestart(t *testing.T) {
	t.Parallel()
	// A restart delay long enough to see the server gone.
	h := startGateway(t, &config.Config{Servers: []config.Server{featureServer("alpha"), featureServer("beta")}},
		gateway.Options{Mode: policy.Off, BackoffMin: 2 * time.Second, BackoffMax: 2 * time.Second})
	type client struct {
		name    string
		cs      *mcp.ClientSession
		mu      sync.Mutex
		changes map[string]int
	}
	var clients []*client
	for _, tr := range transports(t, h) {
		c := &client{name: tr.name, changes: map[string]int{}}
		count := func(kind string) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.changes[kind]++
		}
		c.cs = tr.connect(t, "", &mcp.ClientOptions{
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { count("prompts") },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { count("resources") },
		}, "")
		clients = append(clients, c)
	}
	for _, c := range clients {
		if got := promptNames(t, c.cs); !slices.Equal(got, allPrompts) {
			t.Fatalf("%s: prompts/list before the crash = %v", c.name, got)
		}
	}
	ctx := context.Background()
	res := call(t, clients[0].cs, "alpha__crash", map[string]any{})
	if errorCode(t, res) != "unavailable" {
		t.Fatalf("alpha__crash = %s (%s), want unavailable", resultText(res), errorCode(t, res))
	}
	for _, c := range clients {
		waitFor(t, c.name+": alpha's prompts to leave", func() bool { return !has(promptNames(t, c.cs), "alpha__greet") })
		if st := status(h, "alpha"); st.State == gateway.Ready {
			t.Fatalf("alpha is back already (%+v): the checks below need it down", st)
		}
		if got, want := promptNames(t, c.cs), sorted("beta__greet", "beta__about_beta"); !slices.Equal(got, want) {
			t.Errorf("%s: prompts/list with alpha down = %v, want %v", c.name, got, want)
		}
		if got, want := resourceURIs(t, c.cs), sorted("feat://beta/readme", "feat://beta/logo", "feat://shared/info"); !slices.Equal(got, want) {
			t.Errorf("%s: resources/list with alpha down = %v, want %v", c.name, got, want)
		}
		if got, want := templateURIs(t, c.cs), []string{"feat://beta/items/{item}"}; !slices.Equal(got, want) {
			t.Errorf("%s: resources/templates/list with alpha down = %v, want %v", c.name, got, want)
		}
		if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"name": "Ada"}}); err == nil {
			t.Errorf("%s: prompts/get alpha__greet with alpha down succeeded", c.name)
		}
		for _, uri := range []string{"feat://alpha/readme", "feat://alpha/items/1"} {
			if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("%s: resources/read %s with alpha down succeeded", c.name, uri)
			}
		}
		if res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "feat://beta/readme"}); err != nil || res.Contents[0].Text != "readme of beta" {
			t.Errorf("%s: the other server's resource with alpha down = %+v, %v", c.name, res, err)
		}
		// The URI both list now belongs to beta, and reads go there.
		if res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "feat://shared/info"}); err != nil || res.Contents[0].Text != "shared info from beta" {
			t.Errorf("%s: the shared resource with alpha down = %+v, %v", c.name, res, err)
		}
		if res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__greet", Arguments: map[string]string{"name": "Ada"}}); err != nil || len(res.Messages) != 2 {
			t.Errorf("%s: the other server's prompt with alpha down = %+v, %v", c.name, res, err)
		}
	}
	waitFor(t, "alpha to be restarted", func() bool { st := status(h, "alpha"); return st.State == gateway.Ready && st.Restarts == 1 })
	for _, c := range clients {
		waitFor(t, c.name+": alpha's prompts to come back", func() bool { return slices.Equal(promptNames(t, c.cs), allPrompts) })
		if got := resourceURIs(t, c.cs); !slices.Equal(got, allResources) {
			t.Errorf("%s: resources/list after the restart = %v", c.name, got)
		}
		if got := templateURIs(t, c.cs); !slices.Equal(got, allTemplates) {
			t.Errorf("%s: resources/templates/list after the restart = %v", c.name, got)
		}
		if res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"name": "Ada", "style": "new"}}); err != nil ||
			promptMessages(res)[0] != "user: Greet Ada in a new style (alpha)" {
			t.Errorf("%s: prompts/get alpha__greet after the restart = %+v, %v", c.name, res, err)
		}
		for uri, want := range map[string]string{"feat://alpha/readme": "readme of alpha", "feat://alpha/items/7": "item 7 of alpha", "feat://shared/info": "shared info from alpha"} {
			if res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil || res.Contents[0].Text != want {
				t.Errorf("%s: resources/read %s after the restart = %+v, %v", c.name, uri, res, err)
			}
		}
		if res, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "feat://alpha/items/{item}"},
			Argument: mcp.CompleteParamsArgument{Name: "item", Value: "ba"}}); err != nil || !slices.Equal(res.Completion.Values, []string{"banana@alpha"}) {
			t.Errorf("%s: completion/complete after the restart = %+v, %v", c.name, res, err)
		}
		// One change as alpha left, one as it came back (at least).
		waitFor(t, c.name+": prompts and resources list_changed notifications", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.changes["prompts"] >= 2 && c.changes["resources"] >= 2
		})
	}
}

// A subscription outlives a restart of the resource's server: toolshed subscribes again
// when the server is back, and updates reach the client.
func TestFeaturesResubscribe(t *testing.T) {
	t.Parallel()
	h := startGateway(t, &config.Config{Servers: []config.Server{featureServer("alpha"), featureServer("beta")}}, gateway.Options{Mode: policy.Off})
	var u updates
	cs := h.clientVersion("", u.options(), "2025-11-25")
	admin := h.client("", nil)
	const uri = "feat://alpha/readme"
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first update", func() bool { touch(t, admin, "alpha", uri); return u.count(uri) > 0 })
	if res := call(t, admin, "alpha__crash", map[string]any{}); errorCode(t, res) != "unavailable" {
		t.Fatalf("alpha__crash = %s", resultText(res))
	}
	waitFor(t, "alpha to be restarted", func() bool { st := status(h, "alpha"); return st.State == gateway.Ready && st.Restarts == 1 })
	waitFor(t, "alpha to be subscribed again", func() bool { return has(upstreamSubscriptions(t, admin, "alpha"), uri) })
	before := u.count(uri)
	waitFor(t, "an update after the restart", func() bool { touch(t, admin, "alpha", uri); return u.count(uri) > before })
}

// In a profile, --no-prefix counts only the prompts the profile sees: a name shared with
// an out-of-scope server is bare, and reveals nothing of the other server.
func TestFeaturesNoPrefixInProfile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{featureServer("alpha"), featureServer("beta")},
		Profiles: map[string]config.Profile{"alpha-only": {Scope: policy.Scope{Servers: []string{"alpha"}}}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, NoPrefix: true})
	names := promptNames(t, h.client("alpha-only", nil))
	if !has(names, "greet") || has(names, "alpha__greet") || has(names, "beta__greet") {
		t.Errorf("prompts in the profile = %v, want greet bare", names)
	}
}
