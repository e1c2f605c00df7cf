package validate

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/toolshed/toolshed/gateway/config"
)

// TestFlagsExist builds toolshed from this checkout and checks that every flag the
// manifests pass to toolshed serve is in its serve -h: a flag renamed or not yet merged
// (--stateless, --replica-id, --metrics-addr come from other branches) fails, by name.
func TestFlagsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolshed")
	}
	objs := loadAll(t)
	bin := filepath.Join(t.TempDir(), "toolshed")
	build := exec.Command("go", "build", "-o", bin, "./cmd/toolshed")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building toolshed: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "serve", "-h").CombinedOutput() // -h exits 0; its text is what counts
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		known[m[1]] = true
	}
	if !known["http"] || !known["config"] {
		t.Fatalf("toolshed serve -h lists no --http or --config: cannot read its flags from\n%s", help)
	}
	var specs []*corev1.PodSpec
	for _, d := range find[appsv1.Deployment](objs, "stateless") {
		specs = append(specs, &d.Spec.Template.Spec)
	}
	for _, s := range find[appsv1.StatefulSet](objs, "affinity") {
		specs = append(specs, &s.Spec.Template.Spec)
	}
	missing := map[string]bool{}
	passed := 0
	for _, spec := range specs {
		for name := range serveArgs(t, "toolshed", container(t, "toolshed", spec, "toolshed")) {
			passed++
			if !known[name] {
				missing["--"+name] = true
			}
		}
	}
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Errorf("the manifests pass flags toolshed serve does not have: %s", strings.Join(names, ", "))
	}
	t.Logf("%d flags passed by the manifests, checked against toolshed serve -h", passed)
}

// TestServersConfigLoads reads the ConfigMap's servers config with toolshed's own config
// package: it must load with no warning (a warning is a server left out or a setting
// ignored) and name the servers it shows.
func TestServersConfigLoads(t *testing.T) {
	objs := loadAll(t)
	cm := one[corev1.ConfigMap](t, objs, "common")
	data, ok := cm.Data["servers.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s: no servers.yaml", cm.Name)
	}
	t.Setenv("GITHUB_TOKEN", "test-token") // from the Secret, in the pod
	cfg, warnings, err := config.Parse([]byte(data), "servers.yaml")
	if err != nil {
		t.Fatalf("servers.yaml: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("servers.yaml: warning %s: %s", w.Key, w.Message)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
		if s.URL == "" {
			t.Errorf("server %s has no url: the image has no Node.js to launch a stdio server (Dockerfile.node has)", s.Name)
		}
	}
	if !slices.Equal(names, []string{"github", "tickets"}) {
		t.Errorf("servers %q, want github and tickets", names)
	}
}
