//go:build e2e

package release

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCrossCompile builds cmd/toolshed with .goreleaser.yaml's env, flags and ldflags, as
// goreleaser would (goreleaser itself is not a dependency), and reads each binary's
// header. Each target compiles modernc.org/sqlite anew: on a 2-core machine shared with
// other work, darwin/arm64 alone took more than 10 minutes, so it runs only when asked:
// TOOLSHED_CROSS=all for the six targets, or a comma-separated list such as
// TOOLSHED_CROSS=darwin/arm64,windows/amd64 (with -timeout 60m). TestCrossTargetsResolve
// and TestStaticBinary (linux/amd64) run always.
func TestCrossCompile(t *testing.T) {
	want := os.Getenv("TOOLSHED_CROSS")
	if want == "" {
		t.Skip("set TOOLSHED_CROSS=all (or a list of GOOS/GOARCH) to cross-compile the release targets")
	}
	b := readGoreleaser(t).Builds[0]
	ldflags := strings.ReplaceAll(strings.Join(b.Ldflags, " "), "{{.Version}}", testVersion)
	for _, target := range crossTargets(t) {
		if want != "all" && !slices.Contains(strings.Split(want, ","), target) {
			continue
		}
		goos, goarch, _ := strings.Cut(target, "/")
		t.Run(goos+"_"+goarch, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "toolshed")
			args := append([]string{"build"}, b.Flags...)
			args = append(args, "-ldflags="+ldflags, "-o", out, b.Main)
			cmd := exec.Command("go", args...)
			cmd.Dir = repoRoot
			cmd.Env = append(append(os.Environ(), b.Env...), "GOOS="+goos, "GOARCH="+goarch)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s GOARCH=%s go %s: %v\n%s", goos, goarch, strings.Join(args, " "), err, msg)
			}
			checkFormat(t, out, goos, goarch)
		})
	}
}

// checkFormat fails unless the file at path is an executable for goos/goarch, read from
// its header: ELF, Mach-O or PE, and the machine.
func checkFormat(t *testing.T, path, goos, goarch string) {
	t.Helper()
	got, err := executableFormat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := goos + "/" + goarch; got != want {
		t.Errorf("%s is an executable for %s, want %s", path, got, want)
	}
	if goos == "linux" {
		checkStatic(t, path)
	}
}

// executableFormat reads an executable's header: "linux/amd64" for an x86-64 ELF,
// "darwin/arm64" for an arm64 Mach-O, "windows/amd64" for an x86-64 PE, and so on.
func executableFormat(path string) (string, error) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		return "linux/" + map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine], nil
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		return "darwin/" + map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu], nil
	}
	if f, err := pe.Open(path); err == nil {
		defer f.Close()
		return "windows/" + map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine], nil
	}
	return "", fmt.Errorf("%s is not an ELF, Mach-O or PE executable", path)
}
