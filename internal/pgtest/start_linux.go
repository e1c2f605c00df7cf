package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// start initializes a data directory and runs postgres on it. As root (tests run as
// root here and in CI) the server runs as the postgres user, since postgres refuses to
// run as root; the data directory is given to that user. That is why the directory is
// made right in TMPDIR, which every user can enter, rather than in a t.TempDir (under
// a directory only its owner can enter); the returned stop removes it.
//
// Should the test binary die without running its cleanups (go test's -timeout), the
// kernel sends postgres SIGQUIT, its immediate shutdown, which removes its System V
// shared memory; its dynamic shared memory is in the data directory (mmap) rather than
// in /dev/shm, so nothing of it is left outside TMPDIR.
func start(bin string) (*Server, func(), error) {
	dir, err := os.MkdirTemp("", "toolshed-pgtest-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("running as root, and there is no postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	data := filepath.Join(dir, "data")
	command := func(name string, deathSig syscall.Signal, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LC_ALL=C.UTF-8", "TZ=UTC"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: deathSig}
		return cmd
	}
	initdb := command("initdb", syscall.SIGKILL, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// The port is free when asked; another process may take it before postgres does,
	// so starting is tried a few times.
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		var logs bytes.Buffer
		cmd := command("postgres", syscall.SIGQUIT, "-D", data, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "dynamic_shared_memory_type=mmap",
			"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
			"-c", "max_connections=200")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("postgres: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		s := &Server{URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), port: port}
		if err := ready(s.URL, exited); err != nil {
			cmd.Process.Kill()
			<-exited
			lastErr = fmt.Errorf("%v\n%s", err, logs.String())
			continue
		}
		stop := func() {
			cmd.Process.Signal(syscall.SIGINT) // fast shutdown
			select {
			case <-exited:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-exited
			}
			cleanup()
		}
		return s, stop, nil
	}
	cleanup()
	return nil, nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
