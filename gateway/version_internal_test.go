package gateway

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	main := func(path, version string, deps ...*debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: path, Version: version}, Deps: deps}
	}
	for _, tc := range []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped by goreleaser", "1.2.3", main(modulePath, "v1.2.3"), "1.2.3"},
		{"stamped by git describe", "v1.2.3-4-gabcdef0", nil, "1.2.3-4-gabcdef0"},
		{"stamped with a commit", "8606f0a", nil, "8606f0a"},
		{"stamped wins over the module", "2.0.0", main(modulePath, "v1.2.3"), "2.0.0"},
		{"go install @version", "", main(modulePath, "v1.2.3"), "1.2.3"},
		{"checkout with vcs", "", main(modulePath, "v0.0.0-20261206194000-8606f0a1b2c3+dirty"), "0.0.0-20261206194000-8606f0a1b2c3+dirty"},
		{"checkout without vcs", "", main(modulePath, "(devel)"), DevVersion},
		{"no build info", "", nil, DevVersion},
		{"a library", "", main("example.com/agent", "v0.3.0", &debug.Module{Path: "golang.org/x/term", Version: "v0.30.0"}, &debug.Module{Path: modulePath, Version: "v1.4.0"}), "1.4.0"},
		{"a library, replaced", "", main("example.com/agent", "v0.3.0", &debug.Module{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "../toolshed"}}), DevVersion},
		{"a library, replaced by a version", "", main("example.com/agent", "", &debug.Module{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.4.1"}}), "1.4.1"},
		{"a test binary", "", main("", ""), DevVersion},
	} {
		if got := resolveVersion(tc.stamped, tc.bi); got != tc.want {
			t.Errorf("%s: resolveVersion(%q, ...) = %q, want %q", tc.name, tc.stamped, got, tc.want)
		}
	}
}
