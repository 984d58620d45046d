// Package joblock is the node's one-job-at-a-time rule: plane jobs, repairs and `word run` all take the
// same file lock, so two changes never run on a machine at once, even from different processes.
package joblock

import (
	"errors"
	"os"
	"syscall"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Lock is a held job lock.
type Lock struct{ f *os.File }

// TryAcquire takes the lock at path without waiting; agent.busy when another holder has it.
func TryAcquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot open job lock %s", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errcode.New(errcode.AgentBusy, "another job holds the node's job lock")
		}
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot take job lock %s", path)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock back. The kernel also releases it if the process dies.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
		l.f = nil
	}
}
