// Package nginx runs Debian's nginx in front of toolshed replicas with the config
// toolshed ships (deploy/nginx), for the tests and the load benchmark: on loopback, as
// a process of its own that needs no root, with every file it writes in one directory.
package nginx

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Shipped config files, in deploy/nginx of the repository.
const (
	Affinity  = "toolshed.conf"           // routes each session to the replica that owns it
	Stateless = "toolshed-stateless.conf" // a plain round-robin pool
	proxyConf = "toolshed-proxy.conf"     // the proxy settings both include
)

// ErrNoNginx is returned by Start when nginx is not installed.
var ErrNoNginx = errors.New("nginx is not installed (Debian: apt-get install nginx)")

// replicaAddr is how the shipped files name replica N.
var replicaAddr = regexp.MustCompile(`toolshed-([0-9]+):8080`)

// Render returns the shipped file name of deploy dir with its replicas at addrs
// (replica N, toolshed-N:8080 in the file, at addrs[N-1]), nginx listening on listen,
// and its include of the proxy settings at proxy.
func Render(dir, name string, addrs []string, listen, proxy string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	var bad error
	out := replicaAddr.ReplaceAllStringFunc(string(data), func(m string) string {
		n, _ := strconv.Atoi(replicaAddr.FindStringSubmatch(m)[1])
		if n < 1 || n > len(addrs) {
			bad = fmt.Errorf("%s names replica %d; %d addresses given", name, n, len(addrs))
			return m
		}
		return addrs[n-1]
	})
	if bad != nil {
		return "", bad
	}
	if !strings.Contains(out, "listen 8080;") || !strings.Contains(out, "/etc/nginx/"+proxyConf) {
		return "", fmt.Errorf("%s: no `listen 8080;` or no include of /etc/nginx/%s to rewrite", name, proxyConf)
	}
	out = strings.ReplaceAll(out, "listen 8080;", "listen "+listen+";")
	return strings.ReplaceAll(out, "/etc/nginx/"+proxyConf, proxy), nil
}

// Proc is a running nginx.
type Proc struct {
	Dir       string // its prefix: config, logs, temporary files
	AccessLog string // one line per request: see LogFormat
	cmd       *exec.Cmd
	done      chan struct{}
}

// LogFormat is the access log's: the session id the request carried, the method, the
// upstream address(es) nginx tried and their statuses, and the response's session id.
const LogFormat = `$http_mcp_session_id|$request_method|$upstream_addr|$upstream_status|$status|$sent_http_mcp_session_id`

// Bin returns the path of nginx: on PATH, or Debian's /usr/sbin/nginx (not on a
// user's PATH). The error is ErrNoNginx when there is none.
func Bin() (string, error) {
	for _, name := range []string{"nginx", "/usr/sbin/nginx"} {
		if bin, err := exec.LookPath(name); err == nil {
			return bin, nil
		}
	}
	return "", ErrNoNginx
}

// Start writes a main nginx.conf around the shipped file name of deploy dir, rendered
// for addrs (see Render), into a new directory in TMPDIR, and runs nginx on listen
// (host:port) until Stop. As root, nginx runs as nobody: it needs no privilege (and the
// directory is in TMPDIR, which nobody can enter, rather than in a test's t.TempDir).
// nginx is sent SIGTERM, which stops its workers too, should the process that started
// it die without calling Stop (Linux). The directory is removed by Stop, or at once
// when Start fails.
func Start(deploy, name string, addrs []string, listen string) (p *Proc, err error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolshed-nginx-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	for _, sub := range []string{"tmp", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	proxy, err := os.ReadFile(filepath.Join(deploy, proxyConf))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, proxyConf), proxy, 0o644); err != nil {
		return nil, err
	}
	site, err := Render(deploy, name, addrs, listen, filepath.Join(dir, proxyConf))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(site), 0o644); err != nil {
		return nil, err
	}
	p = &Proc{Dir: dir, AccessLog: filepath.Join(dir, "logs", "access.log"), done: make(chan struct{})}
	tmp := filepath.Join(dir, "tmp")
	main := fmt.Sprintf(`daemon off;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log notice;
events { worker_connections 8192; }
http {
    log_format toolshed '%[3]s';
    access_log %[2]s toolshed;
    client_body_temp_path %[4]s/body;
    proxy_temp_path %[4]s/proxy;
    fastcgi_temp_path %[4]s/fastcgi;
    uwsgi_temp_path %[4]s/uwsgi;
    scgi_temp_path %[4]s/scgi;
    include %[1]s/%[5]s;
}
`, dir, p.AccessLog, LogFormat, tmp, name)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(main), 0o644); err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "logs", "error.log"))
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(p.cmd.SysProcAttr)
	if os.Geteuid() == 0 {
		// nobody: nginx needs no root on a high port; its files are made its own.
		if err := chownAll(dir, 65534, 65534); err != nil {
			return nil, err
		}
		p.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	var stderr strings.Builder
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nginx: %v", err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	// Ready once it accepts connections.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(filepath.Join(dir, "logs", "error.log"))
			return nil, fmt.Errorf("nginx exited: %s%s", stderr.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("nginx did not listen on %s within 30s", listen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func chownAll(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// Stop stops nginx (SIGQUIT, its graceful stop, then SIGKILL after 10 s) and removes
// its directory.
func (p *Proc) Stop() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	os.RemoveAll(p.Dir)
}

// ErrorLog returns nginx's error log.
func (p *Proc) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "logs", "error.log"))
	return string(b)
}

// Entry is one request of the access log.
type Entry struct {
	Session, Method string
	Upstreams       []string // the replicas tried, in order (the last answered)
	Statuses        []string // their statuses
	Status          string   // what the client got
	NewSession      string   // the session id the answer issued
}

// Entries reads the access log.
func (p *Proc) Entries() ([]Entry, error) {
	f, err := os.Open(p.AccessLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 6 {
			continue
		}
		dash := func(s string) string {
			if s == "-" {
				return ""
			}
			return s
		}
		e := Entry{Session: dash(f[0]), Method: f[1], Status: f[4], NewSession: dash(f[5])}
		// "a, b" when nginx tried several replicas.
		for _, u := range strings.Split(f[2], ",") {
			e.Upstreams = append(e.Upstreams, strings.TrimSpace(u))
		}
		for _, s := range strings.Split(f[3], ",") {
			e.Statuses = append(e.Statuses, strings.TrimSpace(s))
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
