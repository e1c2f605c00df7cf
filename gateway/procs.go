package gateway

import (
	"os/exec"
	"sync"
)

// processes are the upstream servers' processes that are running, so that a gateway
// that must exit at once (a second signal, a drain that timed out) can end each of them
// with its whole process group (npx, a shell, node and the server itself) and leave no
// orphans behind.
type processes struct {
	mu     sync.Mutex
	cmds   map[*exec.Cmd]bool
	killed bool // Kill was called: a process that starts now is ended at once
}

// add records a process that started.
func (p *processes) add(cmd *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		killProcessGroup(cmd)
		return
	}
	if p.cmds == nil {
		p.cmds = map[*exec.Cmd]bool{}
	}
	p.cmds[cmd] = true
}

// end kills what is left of cmd's process group, and forgets it.
func (p *processes) end(cmd *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmds[cmd] {
		delete(p.cmds, cmd)
		killProcessGroup(cmd)
	}
}

// killAll kills the process group of every process, and of every process that starts
// from now on.
func (p *processes) killAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
	for cmd := range p.cmds {
		killProcessGroup(cmd)
	}
	p.cmds = nil
}
