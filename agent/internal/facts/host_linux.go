package facts

import (
	"os"
	"syscall"
)

// thisHost asks the kernel: uname for the release, machine and node name, statfs for the root
// filesystem.
func thisHost() Host {
	var h Host
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		h.Kernel, h.Arch, h.Hostname = utsString(u.Release[:]), utsString(u.Machine[:]), utsString(u.Nodename[:])
	}
	if h.Hostname == "" {
		h.Hostname, _ = os.Hostname()
	}
	var st syscall.Statfs_t
	if syscall.Statfs("/", &st) == nil {
		h.DiskBytes = int64(st.Blocks) * int64(st.Bsize)
		h.DiskFree = int64(st.Bavail) * int64(st.Bsize)
	}
	h.Addresses = addresses()
	return h
}

// utsString reads a NUL-ended utsname field, whose element type differs by architecture.
func utsString[T int8 | uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
