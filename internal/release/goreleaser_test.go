package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository's root, where the Dockerfile and .goreleaser.yaml are.
const repoRoot = "../.."

// goreleaserConfig is the part of goreleaser v2's configuration that .goreleaser.yaml
// uses (https://goreleaser.com/customization/). It is decoded strictly: a key that is not
// here is a typo or a key this test does not check, and fails the test.
type goreleaserConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Before      struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		ID           string   `yaml:"id"`
		Main         string   `yaml:"main"`
		Binary       string   `yaml:"binary"`
		Env          []string `yaml:"env"`
		Flags        []string `yaml:"flags"`
		Ldflags      []string `yaml:"ldflags"`
		Goos         []string `yaml:"goos"`
		Goarch       []string `yaml:"goarch"`
		ModTimestamp string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID              string   `yaml:"id"`
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Changelog struct {
		Sort string `yaml:"sort"`
	} `yaml:"changelog"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c goreleaserConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return c
}

// TestGoreleaserConfig checks .goreleaser.yaml: goreleaser v2's format, one build of
// cmd/toolshed with cgo off for Linux, macOS and Windows on amd64 and arm64, stamped with
// the version as the Dockerfile stamps it, archives (zip on Windows) with the README, and
// sha256 checksums.
func TestGoreleaserConfig(t *testing.T) {
	c := readGoreleaser(t)
	if c.Version != 2 {
		t.Errorf("version = %d, want 2 (goreleaser v2's format)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1 (cmd/toolshed)", len(c.Builds))
	}
	b := c.Builds[0]
	if b.Main != "./cmd/toolshed" || b.Binary != "toolshed" {
		t.Errorf("build main %q binary %q, want ./cmd/toolshed and toolshed", b.Main, b.Binary)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %q lacks CGO_ENABLED=0: the binaries would not be static, nor cross-compile without a C toolchain", b.Env)
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build flags %q lack -trimpath", b.Flags)
	}
	var targets []string
	for _, os := range b.Goos {
		for _, arch := range b.Goarch {
			targets = append(targets, os+"/"+arch)
		}
	}
	slices.Sort(targets)
	want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}
	if !slices.Equal(targets, want) {
		t.Errorf("targets %q, want %q", targets, want)
	}

	// The version is stamped as the Dockerfile stamps it ({{.Version}} for ${VERSION}):
	// TestStaticBinary and TestImage show that this -X reaches serverInfo.version.
	docker := dockerfileLdflags(t)
	if got := strings.Join(b.Ldflags, " "); strings.ReplaceAll(got, "{{.Version}}", "${VERSION}") != docker {
		t.Errorf("ldflags %q differ from the Dockerfile's %q", got, docker)
	}

	if len(c.Archives) != 1 {
		t.Fatalf("%d archives, want 1", len(c.Archives))
	}
	a := c.Archives[0]
	if !slices.Equal(a.Formats, []string{"tar.gz"}) || len(a.FormatOverrides) != 1 || a.FormatOverrides[0].Goos != "windows" || !slices.Equal(a.FormatOverrides[0].Formats, []string{"zip"}) {
		t.Errorf("archive formats %q with overrides %+v, want tar.gz and zip for windows", a.Formats, a.FormatOverrides)
	}
	if !slices.Equal(a.IDs, []string{b.ID}) {
		t.Errorf("archive ids %q, want the build's %q", a.IDs, b.ID)
	}
	for _, f := range a.Files {
		matches, err := filepath.Glob(filepath.Join(repoRoot, f))
		if err != nil {
			t.Errorf("archive file %q: %v", f, err)
		}
		if !strings.ContainsAny(f, "*?[") && len(matches) == 0 {
			t.Errorf("archive file %q does not exist", f)
		}
	}
	if !slices.Contains(a.Files, "README.md") {
		t.Errorf("archive files %q lack README.md", a.Files)
	}
	if c.Checksum.Algorithm != "sha256" || c.Checksum.NameTemplate == "" {
		t.Errorf("checksum %+v, want sha256 into a named file", c.Checksum)
	}
}

// TestGoreleaserConfigStrict shows that the strict reading is strict: a key goreleaser
// does not have (a typo) fails.
func TestGoreleaserConfigStrict(t *testing.T) {
	dec := yaml.NewDecoder(strings.NewReader("version: 2\nbuilds:\n  - goos: [linux]\n    gorach: [amd64]\n"))
	dec.KnownFields(true)
	var c goreleaserConfig
	if err := dec.Decode(&c); err == nil || !strings.Contains(err.Error(), "gorach") {
		t.Errorf("a config with gorach decoded with error %v, want one naming the unknown key", err)
	}
}

// dockerfileLdflags returns the -ldflags value of the Dockerfile's go build line.
func dockerfileLdflags(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`go build .*-ldflags="([^"]*)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`Dockerfile: no go build ... -ldflags="..." line`)
	}
	return string(m[1])
}

// crossTargets returns the GOOS/GOARCH pairs .goreleaser.yaml builds.
func crossTargets(t *testing.T) []string {
	t.Helper()
	b := readGoreleaser(t).Builds[0]
	var targets []string
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			targets = append(targets, goos+"/"+goarch)
		}
	}
	return targets
}

// unresolved lists the packages of cmd/toolshed that do not resolve for target with cgo
// off (go list -deps: a dependency with no files for it, a missing import), with the
// go tool's message. It compiles nothing, so it takes seconds where a build of a new
// target takes minutes.
func unresolved(t *testing.T, target string) []string {
	t.Helper()
	goos, goarch, _ := strings.Cut(target, "/")
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{\"\\n\"}}{{end}}", "./cmd/toolshed")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s GOARCH=%s go list: %v", goos, goarch, err)
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' })
}

// TestCrossTargetsResolve checks, for each target of .goreleaser.yaml, that every package
// cmd/toolshed needs has files for it with cgo off: what breaks a cross-build most often
// (a pure-Go dependency that does not support an OS or architecture). js/wasm, which
// modernc.org/sqlite does not support, shows the check fails when a target cannot build.
func TestCrossTargetsResolve(t *testing.T) {
	for _, target := range crossTargets(t) {
		if bad := unresolved(t, target); len(bad) > 0 {
			t.Errorf("%s: cmd/toolshed does not build: %s", target, strings.Join(bad, " "))
		}
	}
	if bad := unresolved(t, "js/wasm"); len(bad) == 0 {
		t.Errorf("js/wasm resolved, though modernc.org/sqlite does not support it: the check finds nothing")
	}
}
