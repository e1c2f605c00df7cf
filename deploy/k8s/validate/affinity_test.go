package validate

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// service returns the Service named name under dir.
func service(t *testing.T, objs []object, dir, name string) *corev1.Service {
	t.Helper()
	for _, s := range find[corev1.Service](objs, dir) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s: no Service %s", dir, name)
	return nil
}

// nginxConf is what the nginx ConfigMap's default.conf says about routing.
type nginxConf struct {
	upstreams map[string][]string // upstream name: its server lines, in order
	routes    []route             // the map's regex entries, in order
	def       string              // the map's default
	includes  []string
}

type route struct {
	re       *regexp.Regexp
	raw      string
	upstream string
}

// parseNginx reads the parts of an nginx config that route toolshed's sessions: the
// upstream blocks, the map from $http_mcp_session_id, and the include lines.
func parseNginx(t *testing.T, conf string) nginxConf {
	t.Helper()
	n := nginxConf{upstreams: map[string][]string{}}
	for _, m := range regexp.MustCompile(`(?s)upstream (\w+) \{(.*?)\}`).FindAllStringSubmatch(conf, -1) {
		for _, s := range regexp.MustCompile(`(?m)^\s*server (.*);$`).FindAllStringSubmatch(m[2], -1) {
			n.upstreams[m[1]] = append(n.upstreams[m[1]], s[1])
		}
	}
	mm := regexp.MustCompile(`(?s)map \$http_mcp_session_id \$toolshed_upstream \{\n(.*?)\n\s*\}\n`).FindStringSubmatch(conf)
	if mm == nil {
		t.Fatal("nginx default.conf: no map $http_mcp_session_id $toolshed_upstream")
	}
	for _, line := range strings.Split(mm[1], "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case len(f) == 2 && f[0] == "default":
			n.def = f[1]
		case len(f) == 2 && strings.HasPrefix(f[0], `"~`):
			raw := strings.Trim(f[0], `"`)[1:]
			re, err := regexp.Compile(raw)
			if err != nil {
				t.Fatalf("nginx map pattern %s: %v", raw, err)
			}
			n.routes = append(n.routes, route{re, raw, f[1]})
		default:
			t.Errorf("nginx map: line %q is neither default nor a quoted ~regex and an upstream", line)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*include (\S+);`).FindAllStringSubmatch(conf, -1) {
		n.includes = append(n.includes, m[1])
	}
	return n
}

// routeOf returns the upstream nginx sends a session id to. Go's regexp reads the map's
// patterns as nginx's PCRE does (anchors, a character class, counted repetition), but
// for PCRE's $ also matching before a final newline, which a header value cannot hold.
func (n nginxConf) routeOf(id string) string {
	for _, r := range n.routes {
		if r.re.MatchString(id) {
			return r.upstream
		}
	}
	return n.def
}

// TestAffinityStatefulSet checks the affinity variant: the StatefulSet's pods are the
// replicas (their names are their --replica-id), the headless Service names each one, the
// pool Service has the ready ones, and the nginx config routes each pod's session ids to
// that pod by its headless DNS name, anything else to the pool, and takes no address
// from the header.
func TestAffinityStatefulSet(t *testing.T) {
	objs := loadAll(t)
	sts := one[appsv1.StatefulSet](t, objs, "affinity")
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("StatefulSet %s: replicas %v, want 3", sts.Name, sts.Spec.Replicas)
	}
	pod := sts.Spec.Template
	checkSelects(t, "StatefulSet "+sts.Name, sts.Spec.Selector.MatchLabels, pod.Labels)
	checkGatewayPod(t, "affinity/statefulset.yaml", &pod.Spec, false, objs)
	c := container(t, "affinity", &pod.Spec, "toolshed")

	headless := service(t, objs, "affinity", sts.Spec.ServiceName)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s (the StatefulSet's serviceName) is not headless: clusterIP %q", headless.Name, headless.Spec.ClusterIP)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: publishNotReadyAddresses is off: a draining pod's open sessions would lose their owner before --drain-timeout", headless.Name)
	}
	checkSelects(t, "Service "+headless.Name, headless.Spec.Selector, pod.Labels)
	checkServicePorts(t, headless, c)
	pdb := one[policyv1.PodDisruptionBudget](t, objs, "affinity")
	checkSelects(t, "PodDisruptionBudget "+pdb.Name, pdb.Spec.Selector.MatchLabels, pod.Labels)

	var nginxCM *corev1.ConfigMap
	for _, cm := range find[corev1.ConfigMap](objs, "affinity") {
		if _, ok := cm.Data["default.conf"]; ok {
			nginxCM = cm
		}
	}
	if nginxCM == nil {
		t.Fatal("affinity: no nginx ConfigMap (a default.conf key)")
	}
	n := parseNginx(t, nginxCM.Data["default.conf"])
	port := namedPort(c, "http")
	fqdn := func(host string) string { return fmt.Sprintf("%s.%s.svc.cluster.local:%d", host, namespace, port) }

	pool := n.upstreams[n.def]
	if len(pool) != 1 || !strings.HasPrefix(pool[0], fqdn("toolshed-pool")+" ") {
		t.Errorf("nginx: the map's default %s has servers %q, want the pool Service %s alone", n.def, pool, fqdn("toolshed-pool"))
	}
	poolSvc := service(t, objs, "affinity", "toolshed-pool")
	if poolSvc.Spec.ClusterIP == corev1.ClusterIPNone || poolSvc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s must balance ready pods only (not headless, not publishing unready ones)", poolSvc.Name)
	}
	checkSelects(t, "Service "+poolSvc.Name, poolSvc.Spec.Selector, pod.Labels)
	checkServicePorts(t, poolSvc, c)

	if len(n.routes) != int(*sts.Spec.Replicas) {
		t.Errorf("nginx map: %d routes for %d replicas", len(n.routes), *sts.Spec.Replicas)
	}
	for i := range int(*sts.Spec.Replicas) {
		podName := fmt.Sprintf("%s-%d", sts.Name, i)
		id := podName + "." + rand.Text() // the form of the ids toolshed-N issues
		up := n.routeOf(id)
		servers := n.upstreams[up]
		owner := fqdn(podName + "." + headless.Name)
		if up == n.def || len(servers) == 0 || !strings.HasPrefix(servers[0], owner+" ") {
			t.Errorf("nginx: session %s goes to %s (servers %q), want an upstream whose first server is its owner %s", id, up, servers, owner)
			continue
		}
		for _, s := range servers[1:] {
			if !strings.HasPrefix(s, fqdn("toolshed-pool")+" ") || !strings.Contains(s, " backup") {
				t.Errorf("nginx upstream %s: server %q, want only the pool as backup after the owner", up, s)
			}
		}
		for _, s := range servers {
			if !strings.Contains(s, " resolve") {
				t.Errorf("nginx upstream %s: server %q lacks resolve: a restarted pod's new address would not be seen", up, s)
			}
		}
	}
	for _, r := range n.routes {
		if !strings.HasPrefix(r.raw, "^") || !strings.HasSuffix(r.raw, "$") {
			t.Errorf("nginx map pattern %s is not anchored at both ends", r.raw)
		}
	}
	good := rand.Text()
	for _, id := range []string{
		"", "toolshed-3." + good, "toolshed-10." + good, "toolshed-1." + strings.ToLower(good),
		"toolshed-1." + good + "x", "toolshed-1." + good[:25], "x-toolshed-1." + good,
		"toolshed-1." + good + "@evil.example", "toolshed-1." + good + "/../x", good,
	} {
		if up := n.routeOf(id); up != n.def {
			t.Errorf("nginx: session id %q routes to %s, want the pool (it is no replica's id)", id, up)
		}
	}

	// The proxy settings are the shipped ones, and nginx reads them where included.
	proxyConf, ok := nginxCM.Data["toolshed-proxy.conf"]
	if !ok {
		t.Fatal("nginx ConfigMap: no toolshed-proxy.conf")
	}
	shipped, err := os.ReadFile(filepath.Join(repoRoot, "deploy/nginx/toolshed-proxy.conf"))
	if err != nil {
		t.Errorf("deploy/nginx/toolshed-proxy.conf (the replicas branch's shipped nginx settings): %v", err)
	} else if string(shipped) != proxyConf {
		t.Errorf("the nginx ConfigMap's toolshed-proxy.conf differs from deploy/nginx/toolshed-proxy.conf; copy it")
	}
	var nginxDep *appsv1.Deployment
	for _, d := range find[appsv1.Deployment](objs, "affinity") {
		nginxDep = d
	}
	if nginxDep == nil {
		t.Fatal("affinity: no nginx Deployment")
	}
	mounted := map[string]string{}
	for _, m := range container(t, "affinity nginx", &nginxDep.Spec.Template.Spec, "nginx").VolumeMounts {
		mounted[m.MountPath] = m.SubPath
	}
	if mounted["/etc/nginx/conf.d/default.conf"] != "default.conf" {
		t.Errorf("nginx Deployment: default.conf is not mounted at /etc/nginx/conf.d/default.conf: %v", mounted)
	}
	for _, inc := range n.includes {
		if mounted[inc] != filepath.Base(inc) {
			t.Errorf("nginx default.conf includes %s, which the Deployment does not mount from the ConfigMap: %v", inc, mounted)
		}
	}
	front := service(t, objs, "affinity", "toolshed")
	checkSelects(t, "Service "+front.Name, front.Spec.Selector, nginxDep.Spec.Template.Labels)
	if labelsOverlap := checkNoSelect(front.Spec.Selector, pod.Labels); labelsOverlap {
		t.Errorf("Service %s selects the toolshed pods too: clients would bypass nginx", front.Name)
	}
}

// checkNoSelect reports whether selector selects labels.
func checkNoSelect(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
