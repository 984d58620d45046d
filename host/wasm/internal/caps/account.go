package caps

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Users and groups are read from /etc/passwd and /etc/group, the local databases a footprint manages
// (accounts from a directory service are not its to change), and changed with the shadow tools run with
// fixed argument lists: useradd, usermod, userdel, groupadd and groupdel take the databases' lock, keep
// passwd, shadow, group and gshadow consistent, write them atomically and apply login.defs, which a
// writer of our own would each have to get right again. authorized_keys is written by the host itself
// (atomically, beneath the user's home without following a link the user could plant).

type passwdEntry struct {
	name       string
	uid, gid   int
	home, shel string
}

type groupEntry struct {
	name    string
	gid     int
	members []string
}

// accounts is one reading of /etc/passwd and /etc/group.
type accounts struct {
	users  map[string]passwdEntry
	byUID  map[int]string
	groups map[string]groupEntry
	byGID  map[int]string
}

// accountsFor reads /etc/passwd and /etc/group once per invocation: a converge of many files names the
// same few owners, and only account.ensure changes them (it calls forgetAccounts).
func accountsFor(ctx context.Context) (*accounts, error) {
	inv := invocationOf(ctx)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.accounts != nil {
		return inv.accounts, nil
	}
	a, err := readAccounts()
	if err == nil {
		inv.accounts = a
	}
	return a, err
}

func forgetAccounts(ctx context.Context) {
	inv := invocationOf(ctx)
	inv.mu.Lock()
	inv.accounts = nil
	inv.mu.Unlock()
}

func readAccounts() (*accounts, error) {
	a := &accounts{users: map[string]passwdEntry{}, byUID: map[int]string{}, groups: map[string]groupEntry{}, byGID: map[int]string{}}
	pw, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityUnknown, "cannot read /etc/passwd").With(errcode.DetailReason, "no /etc/passwd")
	}
	for f := range fields(pw) {
		if len(f) < 7 {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		a.users[f[0]] = passwdEntry{name: f[0], uid: uid, gid: gid, home: f[5], shel: f[6]}
		if _, dup := a.byUID[uid]; !dup {
			a.byUID[uid] = f[0]
		}
	}
	gr, err := os.ReadFile("/etc/group")
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityUnknown, "cannot read /etc/group").With(errcode.DetailReason, "no /etc/group")
	}
	for f := range fields(gr) {
		if len(f) < 4 {
			continue
		}
		gid, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		var members []string
		for m := range strings.SplitSeq(f[3], ",") {
			if m != "" {
				members = append(members, m)
			}
		}
		a.groups[f[0]] = groupEntry{name: f[0], gid: gid, members: members}
		if _, dup := a.byGID[gid]; !dup {
			a.byGID[gid] = f[0]
		}
	}
	return a, nil
}

// fields yields the colon-separated fields of each line that is not a comment or a NIS "+" entry.
func fields(b []byte) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
				continue
			}
			if !yield(strings.Split(line, ":")) {
				return
			}
		}
	}
}

// supplementary lists the groups that name user as a member, sorted.
func (a *accounts) supplementary(user string) []string {
	var out []string
	for _, g := range a.groups {
		if slices.Contains(g.members, user) {
			out = append(out, g.name)
		}
	}
	slices.Sort(out)
	return out
}

func accountRead(ctx context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.AccountRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if (req.User == "") == (req.Group == "") {
		return nil, invalid("user", "ask for one user or one group")
	}
	name := req.User + req.Group
	if !footprint.ValidName(name) {
		return nil, invalid("user", "%q is not a user or group name", name)
	}
	if !matchAny(c.Names, name) {
		return nil, denied(c.Cap, "%s matches no declared name", name).With(errcode.DetailName, name)
	}
	a, err := accountsFor(ctx)
	if err != nil {
		return nil, err
	}
	if req.Group != "" {
		g, ok := a.groups[name]
		return capv1.AccountReadResult{Group: &capv1.GroupState{Name: name, Exists: ok, GID: g.gid}}, nil
	}
	u, ok := a.users[name]
	if !ok {
		return capv1.AccountReadResult{User: &capv1.UserState{Name: name}}, nil
	}
	st := &capv1.UserState{Name: name, Exists: true, UID: u.uid, GID: u.gid, Home: u.home, Shell: u.shel, Groups: a.supplementary(name)}
	keys, err := readAuthorizedKeys(u)
	if err != nil {
		return nil, err
	}
	st.SSHKeys = keys
	return capv1.AccountReadResult{User: st}, nil
}

// maxAuthorizedKeys caps the authorized_keys file read.
const maxAuthorizedKeys = 1 << 20

// sshDir opens the user's ~/.ssh for reading or writing: the home is reached from "/" as the passwd
// entry names it (folders above a home are root's), .ssh and the file inside it are then opened
// relative to it without following a link, since the user owns the home and could plant one pointing
// at any file. .ssh must belong to the user or root. With create, a missing .ssh is made (0700, the
// user's). It answers -1 without error when the home or .ssh does not exist and create is false.
func sshDir(u passwdEntry, create bool) (int, error) {
	if !footprint.ValidPath(u.home) {
		return -1, errcode.New(errcode.CapabilityFailed, "%s's home %q is not an absolute path", u.name, u.home).With(errcode.DetailPath, u.home)
	}
	r, err := resolve("account.ensure", "/", u.home, true)
	if err != nil {
		if errcode.Has(err, errcode.CapabilityNotFound) && !create {
			return -1, nil
		}
		return -1, err
	}
	defer r.close()
	home, err := r.reopen(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return -1, fsError("account.ensure", u.home, err)
	}
	defer unix.Close(home)
	fd, err := unix.Openat(home, ".ssh", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT && create {
		if err := unix.Mkdirat(home, ".ssh", 0o700); err != nil && err != unix.EEXIST {
			return -1, fsError("account.ensure", u.home+"/.ssh", err)
		}
		fd, err = unix.Openat(home, ".ssh", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if err := unix.Fchown(fd, u.uid, u.gid); err != nil {
				unix.Close(fd)
				return -1, fsError("account.ensure", u.home+"/.ssh", err)
			}
		}
	}
	if err == unix.ENOENT {
		return -1, nil
	}
	if err != nil {
		return -1, fsError("account.ensure", u.home+"/.ssh", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || (int(st.Uid) != u.uid && st.Uid != 0) {
		unix.Close(fd)
		return -1, errcode.New(errcode.CapabilityDenied, "%s/.ssh belongs to neither %s nor root", u.home, u.name).With(errcode.DetailPath, u.home+"/.ssh")
	}
	return fd, nil
}

func readAuthorizedKeys(u passwdEntry) ([]string, error) {
	dir, err := sshDir(u, false)
	if err != nil || dir < 0 {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, "authorized_keys", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("account.read", u.home+"/.ssh/authorized_keys", err)
	}
	f := os.NewFile(uintptr(fd), "authorized_keys")
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errcode.New(errcode.CapabilityDenied, "%s/.ssh/authorized_keys is not a regular file", u.home).With(errcode.DetailPath, u.home+"/.ssh/authorized_keys")
	}
	b := make([]byte, maxAuthorizedKeys)
	n, _ := f.Read(b)
	keys := []string{}
	for line := range strings.SplitSeq(string(b[:n]), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		keys = append(keys, line)
	}
	return keys, nil
}

// writeAuthorizedKeys replaces the user's authorized_keys with keys, one per line: a temporary file in
// .ssh, the user's, 0600, synced and renamed over the name (a rename replaces a link planted there,
// never follows it).
func writeAuthorizedKeys(u passwdEntry, keys []string) error {
	dir, err := sshDir(u, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "\n")
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".authorized_keys.lexicon-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fsError("account.ensure", u.home+"/.ssh", err)
	}
	werr := writeAll(fd, []byte(b.String()))
	if werr == nil {
		werr = unix.Fchown(fd, u.uid, u.gid)
	}
	if werr == nil {
		werr = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, "authorized_keys")
	}
	if werr != nil {
		unix.Unlinkat(dir, tmp, 0)
		return fsError("account.ensure", u.home+"/.ssh/authorized_keys", werr)
	}
	_ = unix.Fsync(dir)
	return nil
}

func accountEnsure(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.AccountEnsure
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	fp := &footprint.Footprint{Schema: footprint.SchemaName}
	switch {
	case req.User != nil && req.Group == nil:
		fp.Users = []footprint.User{*req.User}
	case req.Group != nil && req.User == nil:
		fp.Groups = []footprint.Group{*req.Group}
	default:
		return nil, invalid("user", "give one user or one group")
	}
	if err := footprint.Validate(fp); err != nil {
		return nil, err
	}
	if err := check(ctx, w, fp); err != nil {
		return nil, err
	}
	// Whatever happens here, the databases may have changed: later calls read them again.
	defer forgetAccounts(ctx)
	a, err := readAccounts()
	if err != nil {
		return nil, err
	}
	out := capv1.AccountEnsureResult{Changed: []string{}}
	if g := req.Group; g != nil {
		_, exists := a.groups[g.Name]
		switch {
		case g.State == capv1.StatePresent && !exists:
			args := []string{}
			if g.System {
				args = append(args, "--system")
			}
			if err := shadowTool(ctx, "groupadd", append(args, g.Name)...); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "created")
		case g.State == capv1.StateAbsent && exists:
			if err := shadowTool(ctx, "groupdel", g.Name); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "removed")
		}
		return out, nil
	}
	u := req.User
	cur, exists := a.users[u.Name]
	if u.State == capv1.StateAbsent {
		if exists {
			if err := shadowTool(ctx, "userdel", u.Name); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "removed")
		}
		return out, nil
	}
	for _, g := range u.Groups {
		if _, ok := a.groups[g]; !ok {
			return nil, errcode.New(errcode.CapabilityNotFound, "account.ensure: group %s does not exist", g).With(errcode.DetailName, g)
		}
	}
	if !exists {
		args := []string{}
		if u.System {
			args = append(args, "--system")
		}
		if !u.System || len(u.SSHKeys) > 0 {
			args = append(args, "--create-home")
		}
		if _, ok := a.groups[u.Name]; ok {
			// A group of the user's name (made by a group item before it) becomes its primary group,
			// where useradd would otherwise refuse to make one of that name.
			args = append(args, "--gid", u.Name)
		}
		if u.Shell != "" {
			args = append(args, "--shell", u.Shell)
		}
		if u.Home != "" {
			args = append(args, "--home-dir", u.Home)
		}
		if len(u.Groups) > 0 {
			args = append(args, "--groups", strings.Join(u.Groups, ","))
		}
		if err := shadowTool(ctx, "useradd", append(args, u.Name)...); err != nil {
			return nil, err
		}
		out.Changed = append(out.Changed, "created")
		if a, err = readAccounts(); err != nil {
			return nil, err
		}
		cur = a.users[u.Name]
	} else {
		if u.Shell != "" && cur.shel != u.Shell {
			if err := shadowTool(ctx, "usermod", "--shell", u.Shell, u.Name); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "shell")
		}
		if u.Groups != nil && !slices.Equal(a.supplementary(u.Name), slices.Sorted(slices.Values(u.Groups))) {
			if err := shadowTool(ctx, "usermod", "--groups", strings.Join(u.Groups, ","), u.Name); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "groups")
		}
	}
	if u.SSHKeys != nil {
		have, err := readAuthorizedKeys(cur)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(have, u.SSHKeys) {
			if err := writeAuthorizedKeys(cur, u.SSHKeys); err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, "ssh_keys")
		}
	}
	return out, nil
}

// toolTimeout bounds one run of a system tool (useradd, nft).
const toolTimeout = 60 * time.Second

// shadowTool runs one of the shadow tools with a fixed argument list; the names in it were checked
// against the footprint's name rule (never an option) before.
func shadowTool(ctx context.Context, name string, args ...string) error {
	_, err := runTool(ctx, name, nil, args...)
	return err
}

// runTool runs a system tool found in the system folders (never PATH) with a fixed argument list, no
// shell, a minimal environment, its output capped, and the time bounded.
func runTool(ctx context.Context, name string, stdin []byte, args ...string) ([]byte, error) {
	path := findTool(name)
	if path == "" {
		return nil, errcode.New(errcode.CapabilityUnknown, "%s is not installed here", name).With(errcode.DetailReason, name+" not found")
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "LC_ALL=C"}
	cmd.Dir = "/"
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout, stderr := &capped{n: 4 << 20}, &capped{n: 16 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, errcode.New(errcode.CapabilityTimeout, "%s did not finish in %s", name, toolTimeout).With(errcode.DetailLimitMS, toolTimeout.Milliseconds())
	case errors.As(err, &exit):
		msg := strings.TrimSpace(stderr.b.String())
		return nil, errcode.New(errcode.CapabilityFailed, "%s exited %d: %s", name, exit.ExitCode(), msg).
			With(errcode.DetailExitCode, exit.ExitCode()).With(errcode.DetailReason, msg)
	case err != nil:
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot run %s", name)
	}
	return stdout.b.Bytes(), nil
}

func findTool(name string) string {
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
