//go:build e2e

package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestImage builds the image the Dockerfile describes and starts it: the build stage runs
// on this machine (nothing is pulled; see buildStage), its final stage, FROM scratch, is
// built by Debian's buildah, and the image runs under buildah's chroot isolation (no user
// namespace, cgroup or OCI runtime needed) with the host's network, as its nonroot user.
// It checks what the image's config says (user, entrypoint, environment), that it carries
// LICENSE and NOTICE, that it serves /healthz, /readyz and MCP with the stamped version,
// and that the search log lands in the data directory nonroot owns.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image")
	}
	testupstream.Program(t, "buildah", "apt-get install buildah", "buildah")
	out := t.TempDir()
	final := buildStage(t, out, testVersion)
	if final.from != "scratch" {
		t.Fatalf("Dockerfile: the final stage is FROM %s; this test builds it without pulling only FROM scratch", final.from)
	}
	if err := os.WriteFile(filepath.Join(out, "Containerfile"), []byte(finalStageFile(t, final)), 0o644); err != nil {
		t.Fatal(err)
	}

	store := t.TempDir()
	buildah := func(args ...string) string {
		t.Helper()
		all := append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}, args...)
		cmd := exec.Command("buildah", all...)
		testupstream.OwnGraceful(t, cmd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return strings.TrimSpace(string(b))
	}
	const tag = "localhost/toolshed:release-test"
	buildah("bud", "--isolation", "chroot", "-f", filepath.Join(out, "Containerfile"), "-t", tag, out)
	t.Cleanup(func() {
		exec.Command("buildah", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs", "umount", "--all").Run()
	})

	var img struct {
		OCIv1 struct {
			Config struct {
				User       string
				Env        []string
				Entrypoint []string
				Cmd        []string
			} `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(buildah("inspect", "--type", "image", tag)), &img); err != nil {
		t.Fatalf("buildah inspect: %v", err)
	}
	cfg := img.OCIv1.Config
	if cfg.User != "65532:65532" {
		t.Errorf("image user = %q, want 65532:65532 (nonroot)", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/toolshed"}) {
		t.Errorf("image entrypoint = %q, want [/usr/local/bin/toolshed]", cfg.Entrypoint)
	}
	for _, want := range []string{"XDG_DATA_HOME=/var/lib", "XDG_CACHE_HOME=/var/cache", "HOME=/home/nonroot"} {
		if !slices.Contains(cfg.Env, want) {
			t.Errorf("image environment %q lacks %s", cfg.Env, want)
		}
	}

	ctr := buildah("from", tag)
	root := buildah("mount", ctr)
	for _, dir := range []string{"home/nonroot", "var/lib/toolshed", "var/cache/toolshed"} {
		fi, err := os.Stat(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("image: %v", err)
		}
		if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || st.Uid != 65532 || st.Gid != 65532 {
			t.Errorf("image: /%s is %v owned by %d:%d, want a directory of nonroot (65532:65532)", dir, fi.Mode(), st.Uid, st.Gid)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|0o777 {
		t.Errorf("image: /tmp is %v (%v), want drwxrwxrwt", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		t.Errorf("image: no CA certificates: %v", err)
	}
	for _, name := range shippedNotices {
		got, err := os.ReadFile(filepath.Join(root, "usr/share/doc/toolshed", name))
		if err != nil || string(got) != readRoot(t, name) {
			t.Errorf("image: /usr/share/doc/toolshed/%s is not the repository's %s (%v)", name, name, err)
		}
	}

	// The data directory is a volume (VOLUME in the Dockerfile, a volume in deploy/k8s):
	// mount one that nonroot owns, as Kubernetes' fsGroup makes it, to read the log after.
	data := t.TempDir()
	if err := os.Chown(data, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	addr := testupstream.FreeAddr(t)
	cmd := exec.Command("buildah", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs",
		"run", "--isolation", "chroot", "--network", "host", "--volume", data+":/var/lib/toolshed", ctr, "--", "/usr/local/bin/toolshed", "serve", "--http", addr)
	testupstream.OwnGraceful(t, cmd)
	cmd.Stderr, cmd.Stdout = &testWriter{t}, &testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// buildah answers SIGTERM by killing what it runs, so the SIGTERM a container runtime
	// sends goes to toolshed itself, found among buildah's descendants.
	stop := func() {
		for _, pid := range descendants(cmd.Process.Pid) {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); strings.HasSuffix(exe, "/usr/local/bin/toolshed") {
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the container did not exit within 30 s of toolshed's SIGTERM")
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(stop)
	checkServes(t, addr, done)
	stop()

	// The search log: $XDG_DATA_HOME/toolshed/searchlog.db, written by nonroot.
	dbPath := filepath.Join(data, "searchlog.db")
	fi, err := os.Stat(dbPath)
	if err != nil {
		t.Fatalf("the search log is not in the data volume, where the image's XDG_DATA_HOME puts it: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65532 {
		t.Errorf("%s is owned by uid %d, want 65532: the server did not run as nonroot", dbPath, st.Uid)
	}
	var logged []byte
	for _, suffix := range []string{"", "-wal"} {
		b, _ := os.ReadFile(dbPath + suffix)
		logged = append(logged, b...)
	}
	if !bytes.Contains(logged, []byte("create an issue on github")) {
		t.Errorf("the search log in the image does not hold the query the test searched for")
	}
}

// descendants returns the process ids below pid, read from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its last ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
