// Package validate checks toolshed's Kubernetes manifests (deploy/k8s): every document
// decodes strictly into its k8s.io/api type, and what the manifests say agrees with
// itself and with toolshed (the flags they pass exist, the nginx routing names the
// StatefulSet's pods, the servers config loads without a warning). It is a module of
// its own so that k8s.io/api stays out of toolshed's go.mod; .ci/run runs its tests.
package validate
