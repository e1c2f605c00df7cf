package nginx

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

const deploy = "../../deploy/nginx"

func TestRender(t *testing.T) {
	addrs := []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"}
	for _, name := range []string{Affinity, Stateless} {
		out, err := Render(deploy, name, addrs, "127.0.0.1:9000", "/x/proxy.conf")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(out, "toolshed-1:8080") || strings.Contains(out, "listen 8080;") || strings.Contains(out, "include /etc/nginx/") {
			t.Errorf("%s: left unrendered:\n%s", name, out)
		}
		for _, a := range addrs {
			if !strings.Contains(out, "server "+a) {
				t.Errorf("%s: no server %s:\n%s", name, a, out)
			}
		}
		if _, err := Render(deploy, name, addrs[:2], "127.0.0.1:9000", "/x/proxy.conf"); err == nil || !strings.Contains(err.Error(), "names replica 3") {
			t.Errorf("%s with two addresses: %v, want an error naming replica 3", name, err)
		}
	}
	out, _ := Render(deploy, Affinity, addrs, "127.0.0.1:9000", "/x/proxy.conf")
	// The map's patterns are anchored and take no part of the header as an address.
	for _, want := range []string{`"~^toolshed-1\.[A-Z2-7]{26}$"    toolshed_1;`, "default                          toolshed_pool;", "proxy_pass http://$toolshed_upstream;"} {
		if !strings.Contains(out, want) {
			t.Errorf("the affinity config lacks %q", want)
		}
	}
}

// Both shipped configs start with Debian's nginx (as nobody when the test is root);
// with no replica up, a request is answered 502 by nginx itself.
func TestStartShippedConfigs(t *testing.T) {
	if _, err := Bin(); err != nil {
		testupstream.Missing(t, "nginx", "apt-get install nginx", err)
	}
	for _, name := range []string{Affinity, Stateless} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listen := l.Addr().String()
		l.Close()
		p, err := Start(deploy, name, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, listen)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+listen+"/mcp", strings.NewReader("{}"))
		req.Header.Set("Mcp-Session-Id", "127.0.0.1:22")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The client shows the body: it must say what happened and what to do,
			// not be nginx's HTML page.
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "no toolshed replica could serve this request") ||
				!strings.Contains(string(body), "Retry") || strings.Contains(string(body), "<html>") {
				t.Errorf("%s: %d %q with no replica up, want 502 saying what happened", name, resp.StatusCode, body)
			}
		}
		p.Stop()
	}
}
