//go:build linux

package goplugin

import (
	"errors"

	"golang.org/x/sys/unix"
)

// watchExit closes exited when the process pid ends. It watches a pidfd, which becomes readable when
// the process exits and does not reap it (go-plugin's own Wait does), so the signal comes straight
// from the kernel rather than from polling.
func watchExit(pid int, exited chan<- struct{}) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil { // ESRCH: it is already gone
		close(exited)
		return
	}
	go func() {
		defer unix.Close(pidfd)
		defer close(exited)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == nil || !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
}
