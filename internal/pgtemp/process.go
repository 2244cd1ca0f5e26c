package pgtemp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// startLogged starts cmd with its output appended to the file at logPath
// and returns a channel closed when it has exited, so a start-up wait and a
// stop can both tell that it is gone.
func startLogged(cmd *exec.Cmd, logPath string) (<-chan struct{}, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgtemp: %w", err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgtemp: start %s: %w", filepath.Base(cmd.Path), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return done, nil
}

// stopGroup sends sig to cmd, started by startLogged with done, and waits
// for it to exit. After grace it kills cmd's whole process group (procAttr
// gives each program its own), so a stuck program and any child it left
// cannot outlive the stop.
func stopGroup(cmd *exec.Cmd, done <-chan struct{}, sig syscall.Signal, grace time.Duration) {
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
