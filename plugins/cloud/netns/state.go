package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The state root holds every instance, so that a restarted driver (or another process of it, as the
// conformance suite runs three) knows them all:
//
//	<root>/.lock                          flock: shared to read, exclusive to change
//	<root>/bin/lexicon-netns-helper       a copy of the driver, the helper instances run
//	<root>/instances/<id>/state.json      the record below
//	<root>/instances/<id>/user-data       as given at create
//	<root>/instances/<id>/boot.json       the user data's outcome, written by the boot helper
//	<root>/instances/<id>/fs/...          the folders bound over the shared paths inside it
//	<root>/instances/<id>/shim/systemctl  the systemctl shim, first in its PATH
//	<root>/instances/<id>/run/            pid files and service logs
//	<root>/instances/<id>/log/            cloud-init-output.log
//	<root>/instances/<id>/image           the image's name, for an image other than host
//	<root>/rootfs/<id>/                   such an instance's root: overlay layers (image.go)
//
// Everything is root's, 0700 (files 0600). Instance folders are reached through an os.Root on the
// state root, with ids checked against idRE first, so no name from outside walks out of it.

const helperName = "lexicon-netns-helper"

var idRE = regexp.MustCompile(`^ns-[0-9a-f]{8}$`)

// record is an instance as the driver keeps it.
type record struct {
	ID         string            `json:"id"`
	Label      string            `json:"label"`
	Region     string            `json:"region"`
	Type       string            `json:"type"`
	Image      string            `json:"image"`
	Tags       []string          `json:"tags,omitempty"`
	SSHKeys    []string          `json:"ssh_keys,omitempty"`
	IPv4       netip.Addr        `json:"ipv4"`
	PoweredOff bool              `json:"powered_off,omitempty"`
	Created    time.Time         `json:"created"`
	ReverseDNS map[string]string `json:"reverse_dns,omitempty"` // address -> hostname
	BootPID    string            `json:"boot_pid,omitempty"`    // "pid starttime" of the boot helper
	// ImageRoot is the machine root an instance of an image other than host overlays (its lower
	// layer), as the settings named it at create.
	ImageRoot string `json:"image_root,omitempty"`
}

type stateRoot struct {
	path string
	root *os.Root
}

// openState makes (or checks) the state root: a directory owned by this user that no one else can
// write.
func openState(path string) (*stateRoot, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory", path)
	case !ok || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("%s is not owned by this user", path)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("%s is writable by others (mode %o)", path, fi.Mode().Perm())
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"bin", "instances", "rootfs"} {
		if err := r.MkdirAll(d, 0o700); err != nil {
			r.Close()
			return nil, err
		}
	}
	return &stateRoot{path: path, root: r}, nil
}

func helperPath(root string) string { return filepath.Join(root, "bin", helperName) }

// rootOf is the state root of an instance folder (<root>/instances/<id>).
func rootOf(dir string) string { return filepath.Dir(filepath.Dir(dir)) }

func (s *stateRoot) dir(id string) string { return filepath.Join(s.path, "instances", id) }
func (s *stateRoot) rel(id string) string { return filepath.Join("instances", id) }

// lock takes the root's lock, shared or exclusive; the caller calls the returned function.
func (s *stateRoot) lock(exclusive bool) (func(), error) {
	f, err := s.root.OpenFile(".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// installHelper copies this executable to bin/ unless the copy there is the same.
func (s *stateRoot) installHelper() error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	want, err := hashOf(self)
	if err != nil {
		return err
	}
	rel := filepath.Join("bin", helperName)
	if f, err := s.root.Open(rel); err == nil {
		have, herr := hashOf(f)
		f.Close()
		if herr == nil && have == want {
			return nil
		}
	}
	if _, err := self.Seek(0, io.SeekStart); err != nil {
		return err
	}
	tmp := rel + ".tmp-" + randomHex(4)
	out, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, self); err != nil {
		out.Close()
		_ = s.root.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		_ = s.root.Remove(tmp)
		return err
	}
	// Rename, never rewrite in place: running helpers keep the file they were started from.
	return s.root.Rename(tmp, rel)
}

func hashOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// load reads an instance's record; fs.ErrNotExist when there is none.
func (s *stateRoot) load(id string) (*record, error) {
	if !idRE.MatchString(id) {
		return nil, fs.ErrNotExist
	}
	raw, err := s.root.ReadFile(filepath.Join(s.rel(id), "state.json"))
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("instance %s: unreadable state: %w", id, err)
	}
	return &rec, nil
}

func (s *stateRoot) save(rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return s.writeFile(rec.ID, "state.json", append(b, '\n'), 0o600)
}

func (s *stateRoot) writeFile(id, name string, data []byte, mode os.FileMode) error {
	rel := filepath.Join(s.rel(id), name)
	tmp := rel + ".tmp"
	if err := s.root.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := s.root.Chmod(tmp, mode); err != nil {
		return err
	}
	return s.root.Rename(tmp, rel)
}

// all reads every instance's record, in id order.
func (s *stateRoot) all() ([]*record, error) {
	d, err := s.root.Open("instances")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*record
	for _, n := range names {
		rec, err := s.load(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not an instance, or one half made or half deleted
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// boot returns the user data's outcome; nil while it has not finished.
func (s *stateRoot) boot(id string) *bootResult {
	raw, err := s.root.ReadFile(filepath.Join(s.rel(id), "boot.json"))
	if err != nil {
		return nil
	}
	var b bootResult
	if json.Unmarshal(raw, &b) != nil {
		return &bootResult{Error: "boot.json is unreadable"}
	}
	return &b
}

// makeInstanceDir lays out a new instance's folder.
func (s *stateRoot) makeInstanceDir(id, userData, image string) error {
	rel := s.rel(id)
	if err := s.root.Mkdir(rel, 0o700); err != nil {
		return err
	}
	for _, d := range []string{"fs", "shim", "run", "log"} {
		if err := s.root.Mkdir(filepath.Join(rel, d), 0o700); err != nil {
			return err
		}
	}
	// The bound folders get the modes their paths have on a machine: services other than root's may
	// read /etc/lexicon-agent and /usr/local/bin; /var/lib/lexicon-agent is the agent's alone.
	for _, m := range mounts {
		mode := os.FileMode(0o755)
		if m.target == "/var/lib/lexicon-agent" {
			mode = 0o700
		}
		p := filepath.Join(rel, "fs", m.dir)
		if err := s.root.Mkdir(p, mode); err != nil {
			return err
		}
		if err := s.root.Chmod(p, mode); err != nil {
			return err
		}
	}
	_ = s.root.Chmod(filepath.Join(rel, "fs"), 0o755)
	if err := s.root.WriteFile(filepath.Join(rel, "user-data"), []byte(userData), 0o600); err != nil {
		return err
	}
	if image != HostImage && image != "" {
		if err := s.root.WriteFile(filepath.Join(rel, "image"), []byte(image+"\n"), 0o600); err != nil {
			return err
		}
	}
	shim := fmt.Sprintf("#!/bin/sh\n# systemctl for an instance of the netns cloud: its services run under a supervisor, not systemd.\n%s=systemctl %s=%s exec %s \"$@\"\n",
		envHelper, envInstance, shellQuote(s.dir(id)), shellQuote(helperPath(s.path)))
	p := filepath.Join(rel, "shim", "systemctl")
	if err := s.root.WriteFile(p, []byte(shim), 0o755); err != nil {
		return err
	}
	_ = s.root.Chmod(filepath.Join(rel, "shim"), 0o755)
	return s.root.Chmod(p, 0o755)
}

func (s *stateRoot) removeInstanceDir(id string) error {
	if !idRE.MatchString(id) {
		return nil
	}
	return s.root.RemoveAll(s.rel(id))
}

func shellQuote(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

// newID picks an id no instance has.
func (s *stateRoot) newID() string {
	for {
		id := "ns-" + randomHex(4)
		if _, err := s.root.Stat(s.rel(id)); errors.Is(err, fs.ErrNotExist) {
			return id
		}
	}
}
