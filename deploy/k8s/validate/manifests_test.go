package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// k8sDir is deploy/k8s, the manifests' directory.
const k8sDir = ".."

// namespace is where every manifest puts its objects (the nginx config names it).
const namespace = "toolshed"

// object is one decoded manifest document.
type object struct {
	file string // relative to deploy/k8s
	kind string
	obj  any // a pointer to the k8s.io/api type of kind
}

// newObject returns a new value of the k8s.io/api type for apiVersion and kind, or nil
// when the manifests are not expected to hold that kind.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	}
	return nil
}

// decodeStrict decodes one YAML document into its k8s.io/api type: YAML to JSON as
// kubectl does (sigs.k8s.io/yaml), then encoding/json with unknown fields refused, so a
// misspelt or misplaced key fails rather than being dropped as the API server would.
func decodeStrict(doc []byte) (kind string, obj any, err error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return "", nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return "", nil, err
	}
	obj = newObject(tm.APIVersion, tm.Kind)
	if obj == nil {
		return "", nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use", tm.APIVersion, tm.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return "", nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if dec.More() {
		return "", nil, fmt.Errorf("%s: more than one value in a document", tm.Kind)
	}
	return tm.Kind, obj, nil
}

// splitDocs splits a YAML stream at its "---" lines, dropping documents that are only
// comments.
func splitDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		empty := true
		for _, line := range strings.Split(d, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				empty = false
			}
		}
		if !empty {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// loadAll decodes every manifest under deploy/k8s, failing the test on any error.
func loadAll(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, f := range files {
		rel, _ := filepath.Rel(k8sDir, f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocs(b) {
			kind, obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", rel, i+1, err)
				continue
			}
			objs = append(objs, object{rel, kind, obj})
		}
	}
	if len(objs) == 0 {
		t.Fatal("no manifests found under deploy/k8s")
	}
	return objs
}

// find returns the objects of kind in the files under dir (common, stateless, affinity).
func find[T any](objs []object, dir string) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.obj.(*T); ok && strings.HasPrefix(o.file, dir+string(filepath.Separator)) {
			out = append(out, v)
		}
	}
	return out
}

// one returns the only object of kind T under dir.
func one[T any](t *testing.T, objs []object, dir string) *T {
	t.Helper()
	found := find[T](objs, dir)
	if len(found) != 1 {
		var zero T
		t.Fatalf("%s: want one %T, found %d", dir, zero, len(found))
	}
	return found[0]
}

// TestManifestsDecodeStrictly decodes every manifest into its k8s.io/api type, unknown
// fields refused, and checks that each is in the toolshed namespace.
func TestManifestsDecodeStrictly(t *testing.T) {
	objs := loadAll(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
		meta := o.obj.(metav1.Object)
		if o.kind != "Namespace" && meta.GetNamespace() != namespace {
			t.Errorf("%s: %s %s is in namespace %q, want %q (the nginx config's DNS names use it)", o.file, o.kind, meta.GetName(), meta.GetNamespace(), namespace)
		}
	}
	for _, k := range []string{"Namespace", "ConfigMap", "Secret", "Service", "Deployment", "StatefulSet", "PodDisruptionBudget"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

// TestDecodeStrictRefusesUnknownFields shows the decoding is strict: a misplaced key
// (replicas under the pod template) and a misspelt one (readinesProbe) fail, though
// YAML parses them and a lenient decoder drops them.
func TestDecodeStrictRefusesUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    replicas: 3\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n        - name: x\n          readinesProbe: {}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports:\n    - port: 80\n      targetPort: http\n      protocl: TCP\n",
	} {
		if _, _, err := decodeStrict([]byte(doc)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("decoding\n%s\nerr = %v, want an unknown field", doc, err)
		}
	}
	if _, _, err := decodeStrict([]byte("apiVersion: extensions/v1beta1\nkind: Ingress\n")); err == nil {
		t.Error("a kind the manifests do not use decoded")
	}
}
