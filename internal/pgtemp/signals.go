package pgtemp

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var (
	runningMu sync.Mutex
	running   = map[*Instance]bool{}
	watchOnce sync.Once
)

func register(in *Instance, handleSignals bool) {
	runningMu.Lock()
	running[in] = true
	runningMu.Unlock()
	if handleSignals {
		watchOnce.Do(watchSignals)
	}
}

func unregister(in *Instance) {
	runningMu.Lock()
	delete(running, in)
	runningMu.Unlock()
}

// watchSignals closes every running instance on SIGINT/SIGTERM, then restores
// the default handling and re-sends the signal so the process ends with the
// status the signal would have given it.
func watchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		runningMu.Lock()
		list := make([]*Instance, 0, len(running))
		for in := range running {
			list = append(list, in)
		}
		runningMu.Unlock()
		for _, in := range list {
			_ = in.Close()
		}
		signal.Reset(syscall.SIGINT, syscall.SIGTERM)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
}
