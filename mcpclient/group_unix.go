//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the command's process the leader of a process group of
// its own, so that stopping it stops whatever it started too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process of the group that pid leads.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
