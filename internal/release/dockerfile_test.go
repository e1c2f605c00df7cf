//go:build e2e

package release

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildStage runs the build stage of the Dockerfile at the repository's root on this
// machine, as the image build would in its golang:bookworm stage: each RUN after the
// stage's last COPY, in the repository's root, with the stage's ARGs (version as
// VERSION) in the environment, and with the stage's output directory /out moved to out.
// It returns the final stage, whose COPY --from=build lines name paths under /out.
func buildStage(t *testing.T, out, version string) stage {
	t.Helper()
	stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	build, final := stages[1], stages[len(stages)-1]
	if build.name != "build" {
		t.Fatalf("Dockerfile: the first stage is %q, want one named build", build.name)
	}
	env := append(os.Environ(), "VERSION="+version)
	var runs []string
	for _, in := range build.steps {
		switch in.cmd {
		case "COPY":
			runs = nil // what ran before the sources were copied (go mod download) is a cache step
		case "RUN":
			runs = append(runs, in.args)
		}
	}
	for i, r := range runs {
		if !strings.Contains(r, "/out/") {
			t.Fatalf("Dockerfile: RUN %s writes outside /out: this test cannot run it here", r)
		}
		runs[i] = strings.ReplaceAll(r, "/out/", out+"/")
	}
	if len(runs) == 0 || !strings.Contains(strings.Join(runs, "\n"), "go build") {
		t.Fatalf("Dockerfile: no go build after the build stage's last COPY")
	}
	for _, r := range runs {
		if err := runIn(t, repoRoot, env, "sh", "-ec", r); err != nil {
			t.Fatalf("Dockerfile's RUN %s: %v", r, err)
		}
	}
	return final
}

// finalStageFile rewrites the final stage of the Dockerfile for a build context rooted at
// what buildStage made: COPY --from=build /out/X becomes COPY X.
func finalStageFile(t *testing.T, final stage) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", final.from)
	for _, in := range final.steps {
		args := in.args
		if in.cmd == "COPY" {
			fields := strings.Fields(args)
			if !slices.Contains(fields, "--from=build") || len(fields) < 3 || !strings.HasPrefix(fields[len(fields)-2], "/out/") {
				t.Fatalf("Dockerfile: final stage COPY %s: want a copy from the build stage's /out", args)
			}
			fields = slices.DeleteFunc(fields, func(f string) bool { return f == "--from=build" })
			fields[len(fields)-2] = strings.TrimPrefix(fields[len(fields)-2], "/out/")
			args = strings.Join(fields, " ")
		}
		fmt.Fprintf(&b, "%s %s\n", in.cmd, args)
	}
	return b.String()
}
