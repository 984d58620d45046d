//go:build linux

package goplugin

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A driver process is confined by a trampoline: the plane's own executable, started through
// /proc/self/exe with confineEnv set, as the driver's user (set by the kernel at fork, before exec).
// Before anything of the driver runs it sets no_new_privs, restricts itself with Landlock where the
// kernel offers it, and only then execs the driver's sealed memfd (descriptor 3). The restriction is
// the plane's code applied to the process, so it never depends on the driver's cooperation, and the
// memfd that exec maps is the one that was hashed.
const (
	confineEnv = "LEXICON_DRIVER_CONFINE"
	driverFD   = 3 // the sealed executable, as ExtraFiles[0]
)

// confineSpec is what the trampoline applies; it travels in confineEnv as JSON.
type confineSpec struct {
	Landlock int    `json:"landlock"` // the Landlock ABI to use; 0: none
	Sockets  string `json:"sockets"`  // the one folder the driver may write (its go-plugin socket)
}

// DriverUser is the account a driver runs as when the plane runs as root, if it exists; otherwise
// nobody.
const DriverUser = "lexicon-driver"

// Protections that can be applied to a driver process, as Status reports them.
const (
	ProtectUser       = "user"         // a dedicated unprivileged user, not the plane's
	ProtectLandlock   = "landlock"     // the filesystem beyond what a driver needs is out of reach
	ProtectNoNewPrivs = "no_new_privs" // setuid programs cannot raise its privileges
	ProtectUnconfined = "unconfined"   // none of the above could be applied and the admin accepted it
)

// confinement is how this host confines its drivers, decided once per Driver.
type confinement struct {
	cred        *syscall.Credential // nil: the plane's own user
	user        string
	landlockABI int
}

// protections names what c applies; "unconfined" alone when it applies nothing that keeps a driver
// from the plane's files.
func (c confinement) protections() []string {
	var out []string
	if c.cred != nil {
		out = append(out, ProtectUser+":"+c.user)
	}
	if c.landlockABI > 0 {
		out = append(out, ProtectLandlock+":v"+strconv.Itoa(c.landlockABI))
	}
	if len(out) == 0 {
		return []string{ProtectUnconfined}
	}
	return append(out, ProtectNoNewPrivs)
}

func (c confinement) confined() bool { return c.cred != nil || c.landlockABI > 0 }

// decideConfinement picks the driver user (when the plane is root) and the Landlock ABI this kernel
// offers. name overrides the user ("" picks lexicon-driver, else nobody).
func decideConfinement(name string, noLandlock bool) confinement {
	var c confinement
	if os.Geteuid() == 0 {
		candidates := []string{name}
		if name == "" {
			candidates = []string{DriverUser, "nobody"}
		}
		for _, n := range candidates {
			u, err := user.Lookup(n)
			if err != nil {
				continue
			}
			uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
			gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
			if err1 != nil || err2 != nil || uid == 0 {
				continue
			}
			c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
			c.user = n
			break
		}
	}
	if !noLandlock {
		c.landlockABI = landlockABI()
	}
	return c
}

// landlockABI is the Landlock ABI the kernel offers, 0 when it offers none.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// readOnly are the system files a Go driver may need: CA roots for TLS, name resolution, time zones.
// Missing ones are skipped.
var readOnly = []string{
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services",
	"/etc/protocols", "/etc/localtime", "/usr/share/zoneinfo", "/dev/urandom",
}

// loader is what a dynamically linked driver needs to start: the dynamic loader and shared libraries
// (read, never written).
var loader = []string{
	"/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
}

// handledFS is every filesystem right the ABI knows but execute, so anything not granted is denied.
// Execute is left out because the driver's own image is a sealed memfd, which lives on an internal
// filesystem Landlock cannot name in a rule (landlock_add_rule answers EBADFD): handling execute would
// refuse the exec of the very bytes that were verified. What a driver could execute instead it could
// not read past these rules, and runs in the same domain, as the same user, without new privileges.
func handledFS(abi int) uint64 {
	h := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

const fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
	unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// rulesetAttr is struct landlock_ruleset_attr up to the field the ABI knows.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// landlockRestrict restricts this process (every thread: the trampoline is single-purpose and about to
// exec) to spec's rules.
func landlockRestrict(spec confineSpec) error {
	abi := spec.Landlock
	attr := rulesetAttr{fs: handledFS(abi)}
	size := unsafe.Sizeof(uint64(0)) // fs only
	if abi >= 4 {
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	if abi >= 6 {
		// Nor may it signal, or reach the abstract sockets of, any process outside its domain.
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))
	allow := func(fd int, rights uint64) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= fileRights
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: rights & attr.fs, Parent_fd: int32(fd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock_add_rule: %w", errno)
		}
		return nil
	}
	allowPath := func(path string, rights uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // not on this system: nothing to allow
		}
		defer unix.Close(fd)
		return allow(fd, rights)
	}
	read := uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	for _, p := range readOnly {
		if err := allowPath(p, read); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	for _, p := range loader {
		if err := allowPath(p, read); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := allowPath("/dev/null", unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE); err != nil {
		return err
	}
	if spec.Sockets != "" {
		fd, err := unix.Open(spec.Sockets, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket folder: %w", err)
		}
		err = allow(fd, attr.fs)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	_, _, errno = unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// RunTrampoline is the trampoline's whole life, when this process was started as one (confineEnv
// set): confine, then exec the driver. It returns only in any other process. It runs from this
// package's init, so every binary that can start a driver can also confine one.
func runTrampoline() {
	raw, ok := os.LookupEnv(confineEnv)
	if !ok {
		return
	}
	// no_new_privs and Landlock bind the calling thread, and execve keeps the credentials of the thread
	// that calls it: all three happen on this one.
	runtime.LockOSThread()
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "lexicon driver confinement: "+format+"\n", args...)
		os.Exit(70)
	}
	var spec confineSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fail("bad spec: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs: %v", err)
	}
	if spec.Landlock > 0 {
		if err := landlockRestrict(spec); err != nil {
			fail("landlock: %v", err)
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, confineEnv+"=") {
			env = append(env, kv)
		}
	}
	unix.CloseOnExec(driverFD)
	err := unix.Exec(fmt.Sprintf("/proc/self/fd/%d", driverFD), os.Args, env)
	fail("exec driver: %v", err)
}

func init() { runTrampoline() }
