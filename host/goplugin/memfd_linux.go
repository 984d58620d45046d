//go:build linux

package goplugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sealedExecutable copies data into an anonymous memory file, seals it against every change, and
// returns a read-only descriptor of it. Its /proc/self/fd path names those bytes and nothing else: no
// one can swap the file between the checksum and exec, because there is no file on a disk to swap and
// the sealed memory cannot be written, grown or shrunk, even by us.
//
// The bytes are copied from r (at most limit of them; more is an error) kernel-side where the kernel
// can, without passing through this process's heap.
func sealedExecutable(name string, r io.Reader, limit int64) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // kernels before 6.3 know no MFD_EXEC; executable is their default
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	rw := os.NewFile(uintptr(fd), "memfd:"+name)
	defer rw.Close()
	n, err := rw.ReadFrom(&io.LimitedReader{R: r, N: limit + 1})
	if err != nil {
		return nil, fmt.Errorf("write memfd: %w", err)
	}
	if n > limit {
		return nil, errTooLarge
	}
	if err := addSeals(rw.Fd(), waitPinned); err != nil {
		return nil, fmt.Errorf("seal memfd: %w", err)
	}
	// Keep only a read-only descriptor, so that this process holds no writable handle to the image.
	ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", rw.Fd()))
	if err != nil {
		return nil, fmt.Errorf("reopen memfd read-only: %w", err)
	}
	return ro, nil
}

// addSeals seals fd against every change. F_SEAL_WRITE fails with EBUSY while anything holds a
// reference to the file's pages; the kernel waits only about 150 ms for them, and on a loaded machine
// reclaim or compaction can hold freshly written pages longer. That is transient, so busy is asked
// whether to try again (try counts from 1) rather than failing a driver's start.
func addSeals(fd uintptr, busy func(try int) bool) error {
	const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	for try := 1; ; try++ {
		_, err := unix.FcntlInt(fd, unix.F_ADD_SEALS, seals)
		if !errors.Is(err, unix.EBUSY) || !busy(try) {
			return err
		}
	}
}

// waitPinned backs off 50 ms, doubling, for about 3 s in all before giving up.
func waitPinned(try int) bool {
	if try > 6 {
		return false
	}
	time.Sleep(50 * time.Millisecond << (try - 1))
	return true
}

// fdPath is the path through which exec reaches f's bytes.
func fdPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }
