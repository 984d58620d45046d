// Package secretfile reads the plane's configuration files that hold secrets (webhooks, single
// sign-on): a regular file that no other user may write or read, checked through the descriptor it is
// read from.
package secretfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read returns the file's contents, at most limit bytes. The file checked is the file read: one open,
// non-blocking so a FIFO put in its place is refused rather than waited on. It must be a regular file,
// not writable by group or others nor readable by others, and not over limit. The error says which.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o026 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: it holds secrets, so it must not be writable by group or others, nor readable by everyone (chmod 600)", path, perm)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is over %d bytes", path, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	return data, nil
}
