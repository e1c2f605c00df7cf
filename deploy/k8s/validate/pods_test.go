package validate

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// repoRoot is the repository's root (the Dockerfile, cmd/toolshed).
const repoRoot = "../../.."

// serveArgs reads a toolshed container's args: "serve", then --name=value or --name.
func serveArgs(t *testing.T, where string, c *corev1.Container) map[string]string {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("%s: command %q replaces the image's entrypoint; pass args only", where, c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("%s: args %q, want serve first", where, c.Args)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			t.Errorf("%s: arg %q: write flags as --name=value, so that each is one arg", where, a)
			continue
		}
		if !ok {
			value = "true"
		}
		flags[strings.TrimPrefix(name, "--")] = value
	}
	return flags
}

// container returns the container named name.
func container(t *testing.T, where string, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("%s: no container named %s", where, name)
	return nil
}

// portOf returns the port of an address such as 0.0.0.0:8080.
func portOf(t *testing.T, where, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s: address %q has no port", where, addr)
	}
	return int32(n)
}

// namedPort returns the container port named name.
func namedPort(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// dockerfile reads what the image gives the pod: the user it runs as and its ENV.
func dockerfile(t *testing.T) (uid int64, env map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	final := text[strings.LastIndex(text, "\nFROM "):]
	env = map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ENV (.*)$`).FindAllStringSubmatch(final, -1) {
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	m := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindStringSubmatch(final)
	if m == nil {
		t.Fatal("Dockerfile: no numeric USER in the final stage")
	}
	uid, _ = strconv.ParseInt(m[1], 10, 64)
	return uid, env
}

// checkGatewayPod checks the pod template of toolshed replicas: the flags of the
// contract (docs/scale.md), where their values come from, probes, drain, security and the
// writable directories a read-only root filesystem needs.
func checkGatewayPod(t *testing.T, where string, spec *corev1.PodSpec, stateless bool, objs []object) {
	t.Helper()
	c := container(t, where, spec, "toolshed")
	if !regexp.MustCompile(`^ghcr\.io/toolshed/toolshed:\d+\.\d+\.\d+$`).MatchString(c.Image) {
		t.Errorf("%s: image %q, want ghcr.io/toolshed/toolshed at a release version (the Dockerfile's image)", where, c.Image)
	}
	flags := serveArgs(t, where, c)
	want := map[string]string{
		"http":         "0.0.0.0:8080",
		"metrics-addr": "0.0.0.0:9090",
		"probe-addr":   "0.0.0.0:8081",
		"replica-id":   "$(TOOLSHED_REPLICA_ID)",
		"db":           "$(TOOLSHED_DB)",
	}
	for k, v := range want {
		if flags[k] != v {
			t.Errorf("%s: --%s=%q, want %q", where, k, flags[k], v)
		}
	}
	if _, ok := flags["stateless"]; ok != stateless {
		t.Errorf("%s: --stateless given: %v, want %v", where, ok, stateless)
	}
	if namedPort(c, "http") != portOf(t, where, flags["http"]) || namedPort(c, "metrics") != portOf(t, where, flags["metrics-addr"]) ||
		namedPort(c, "probe") != portOf(t, where, flags["probe-addr"]) {
		t.Errorf("%s: container ports %+v do not name --http %s, --metrics-addr %s and --probe-addr %s as http, metrics and probe", where, c.Ports, flags["http"], flags["metrics-addr"], flags["probe-addr"])
	}

	// Every $(VAR) in the args is an env entry (Kubernetes expands only those, and
	// leaves an unknown one as written).
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, a := range c.Args {
		for _, m := range regexp.MustCompile(`\$\(([A-Z_0-9]+)\)`).FindAllStringSubmatch(a, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("%s: arg %q uses $(%s), which is not in the container's env", where, a, m[1])
			}
		}
	}
	if e := env["TOOLSHED_REPLICA_ID"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s: TOOLSHED_REPLICA_ID is not the pod's name (downward API metadata.name): %+v", where, e)
	}
	secret := one[corev1.Secret](t, objs, "common")
	for _, name := range []string{"TOOLSHED_DB", "TOOLSHED_TOKEN"} {
		e := env[name]
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s: %s does not come from a Secret", where, name)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if _, ok := secret.StringData[ref.Key]; ref.Name != secret.Name || !ok {
			t.Errorf("%s: %s from Secret %s key %s, which common/secret.example.yaml does not have", where, name, ref.Name, ref.Key)
		}
	}

	// Probes: liveness on /healthz, readiness on /readyz, on the probes' own port
	// (--probe-addr), which clients flooding the http port cannot fill.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}, {"startupProbe", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "probe" {
			t.Errorf("%s: %s is not GET %s on port probe: %+v", where, p.name, p.path, p.probe)
		}
	}

	// Drain: SIGKILL comes terminationGracePeriodSeconds after the preStop starts; the
	// preStop's sleep and --drain-timeout must both fit, with time left to stop.
	drain, err := time.ParseDuration(flags["drain-timeout"])
	if err != nil {
		t.Errorf("%s: --drain-timeout=%q: %v", where, flags["drain-timeout"], err)
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	grace := 30 * time.Second // Kubernetes' default
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	if grace < preStop+drain+5*time.Second {
		t.Errorf("%s: terminationGracePeriodSeconds %v is shorter than the preStop sleep (%v) + --drain-timeout (%v) + 5 s to stop", where, grace, preStop, drain)
	}

	// Security: non-root as the image's user, read-only root, no capabilities.
	uid, imageEnv := dockerfile(t)
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != uid {
		t.Errorf("%s: the pod does not run as non-root user %d (the Dockerfile's USER)", where, uid)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: the container is not read-only, without privilege escalation and capabilities: %+v", where, sc)
	}

	// A read-only root filesystem: what toolshed writes is on volumes. The data and
	// cache directories are the image's XDG_DATA_HOME and XDG_CACHE_HOME, plus toolshed.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, dir := range []string{"/tmp", imageEnv["XDG_DATA_HOME"] + "/toolshed", imageEnv["XDG_CACHE_HOME"] + "/toolshed"} {
		if m, ok := mounts[dir]; !ok || m.ReadOnly {
			t.Errorf("%s: no writable volume at %s, which toolshed writes (the root filesystem is read-only)", where, dir)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			t.Errorf("%s: mount %s names volume %s, which the pod does not have", where, m.MountPath, m.Name)
		}
	}
	// --config names a key of the ConfigMap mounted there.
	cfgPath := flags["config"]
	m, ok := mounts[filepath.Dir(cfgPath)]
	if !ok || volumes[m.Name].ConfigMap == nil {
		t.Fatalf("%s: --config=%s is not in a mounted ConfigMap", where, cfgPath)
	}
	cm := one[corev1.ConfigMap](t, objs, "common")
	if _, ok := cm.Data[filepath.Base(cfgPath)]; volumes[m.Name].ConfigMap.Name != cm.Name || !ok {
		t.Errorf("%s: --config=%s: ConfigMap %s has no key %s", where, cfgPath, cm.Name, filepath.Base(cfgPath))
	}

	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("%s: want CPU and memory requests and a memory limit, got %+v", where, r)
	}
}

// checkSelects fails unless selector selects the pod labels.
func checkSelects(t *testing.T, what string, selector map[string]string, pod map[string]string) {
	t.Helper()
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(pod)) {
		t.Errorf("%s: selector %v does not select the pods (labels %v)", what, selector, pod)
	}
}

// checkServicePorts fails unless each of the Service's target ports is a container port.
func checkServicePorts(t *testing.T, svc *corev1.Service, c *corev1.Container) {
	t.Helper()
	for _, p := range svc.Spec.Ports {
		if namedPort(c, p.TargetPort.String()) == 0 {
			t.Errorf("Service %s: targetPort %s is not a port of container %s", svc.Name, p.TargetPort.String(), c.Name)
		}
	}
}

func TestStatelessDeployment(t *testing.T) {
	objs := loadAll(t)
	d := one[appsv1.Deployment](t, objs, "stateless")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("Deployment %s: replicas %v, want 3", d.Name, d.Spec.Replicas)
	}
	pod := d.Spec.Template
	checkSelects(t, "Deployment "+d.Name, d.Spec.Selector.MatchLabels, pod.Labels)
	checkGatewayPod(t, "stateless/deployment.yaml", &pod.Spec, true, objs)
	svc := one[corev1.Service](t, objs, "stateless")
	checkSelects(t, "Service "+svc.Name, svc.Spec.Selector, pod.Labels)
	checkServicePorts(t, svc, container(t, "stateless", &pod.Spec, "toolshed"))
	pdb := one[policyv1.PodDisruptionBudget](t, objs, "stateless")
	checkSelects(t, "PodDisruptionBudget "+pdb.Name, pdb.Spec.Selector.MatchLabels, pod.Labels)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want 1", pdb.Name, pdb.Spec.MaxUnavailable)
	}
}
