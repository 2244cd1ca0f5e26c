package cli

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// A command `run` starts on a terminal gets the terminal: its process
// group becomes the terminal's foreground group (tcsetpgrp), as a shell
// does for a job and flock(1) and `etcdctl lock` leave it, so it can read
// a prompt's answer and Ctrl-C reaches it once, from the terminal. lockctl
// takes the terminal back when the command ends.

// foregroundTerminal is the descriptor of the terminal on stdin when
// lockctl's process group is that terminal's foreground group; ok is false
// for a pipe or a file, and when lockctl itself runs in the background
// (`lockctl run … &`), where the terminal is not lockctl's to give.
func foregroundTerminal(stdin io.Reader) (fd int, ok bool) {
	f, isFile := stdin.(*os.File)
	if !isFile {
		return -1, false
	}
	fd = int(f.Fd())
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pgrp != unix.Getpgrp() {
		return -1, false
	}
	return fd, true
}

// giveTerminal makes pgrp the foreground group of the terminal fd. From a
// background group the call is refused with SIGTTOU, which would stop
// lockctl, unless SIGTTOU is ignored; it is ignored only for the call, so
// the commands lockctl starts never inherit the ignoring.
func giveTerminal(fd, pgrp int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgrp)
}

// cldStopped is CLD_STOPPED (<signal.h>): the si_code of a child that
// stopped.
const cldStopped = 5

// childStopped waits until the command (pid) stops or exits, without
// reaping it (cmd.Wait does that): true when it stopped (Ctrl-Z, or
// SIGTTIN), its stop then consumed so the next wait sees what follows.
func childStopped(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || info.Code != cldStopped {
			return false
		}
		_ = unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED, nil)
		return true
	}
}

// suspendWithChild is job control for a command that stopped while it had
// the terminal: lockctl takes the terminal back and stops its own group,
// so the shell sees the job stopped (Ctrl-Z works as without lockctl);
// when the shell continues the job (fg), lockctl gives the terminal back
// to the command and continues it. The lease is not renewed while lockctl
// is stopped: a stop longer than the TTL loses it.
func suspendWithChild(fd, childPgrp int) {
	own := unix.Getpgrp()
	giveTerminal(fd, own)
	stopOwnGroup()
	// Continued: by fg (the terminal is lockctl's again) or by bg.
	if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp == own {
		giveTerminal(fd, childPgrp)
	}
	_ = unix.Kill(-childPgrp, unix.SIGCONT)
}

// stopOwnGroup stops lockctl's process group (lockctl, and whatever shares
// its job, such as the rest of a pipeline), as Ctrl-Z would have, and
// returns once lockctl is continued. kill(0, SIGSTOP) returns before the
// stop takes hold (the kernel hands a process-directed signal to one of
// lockctl's threads, not necessarily the caller), so rather than go on from
// there, and race the shell's fg for the terminal, it waits for the SIGCONT.
func stopOwnGroup() {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = unix.Kill(0, unix.SIGSTOP)
	<-cont
}
