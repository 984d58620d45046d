package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// MapSealedCode maps size bytes of f from offset, a multiple of the page size, as code (read and
// execute, private), when f is a memfd sealed against writing, growing and shrinking: its pages can then
// never change, so running them in place is as safe as running a copy, and costs no copy and only the
// page faults of the code that runs. ok is false for a nil or any other file, and when the mapping
// fails.
func MapSealedCode(f *os.File, offset int64, size int) (code []byte, ok bool) {
	const sealed = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW
	if f == nil || size <= 0 || offset%int64(os.Getpagesize()) != 0 {
		return nil, false
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	var seals int
	if err = sc.Control(func(fd uintptr) {
		seals, err = unix.FcntlInt(fd, unix.F_GET_SEALS, 0)
		if err == nil && seals&sealed == sealed {
			code, err = unix.Mmap(int(fd), offset, size, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		}
	}); err != nil || code == nil {
		return nil, false
	}
	return code, true
}
