package keys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxFileSize caps any key, trust or policy file; they hold lines of text, not data.
const MaxFileSize = 1 << 20

// CheckTrusted refuses a file or directory that anyone but the running user (or root) could have
// written: one owned by another user, or writable by group or others. Trust that others can edit is
// not trust.
func CheckTrusted(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errcode.New(errcode.KeyFileUntrusted, "%s: cannot read its owner", path).With(errcode.DetailPath, path)
	}
	if uid := uint32(os.Getuid()); st.Uid != uid && st.Uid != 0 {
		return errcode.New(errcode.KeyFileUntrusted, "%s is owned by uid %d, not by this user (%d) or root", path, st.Uid, uid).
			With(errcode.DetailPath, path)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return errcode.New(errcode.KeyFileUntrusted, "%s is writable by group or others (mode %04o); run chmod go-w on it", path, fi.Mode().Perm()).
			With(errcode.DetailPath, path)
	}
	return nil
}

// ReadTrusted reads a trust file: the file and its folder must pass CheckTrusted, it must be a
// regular file reached without a symlink, and it must be under MaxFileSize. The checks are made on the
// opened descriptor, so the file read is the file checked.
func ReadTrusted(path string) ([]byte, error) {
	return readChecked(path, false)
}

// ReadPrivate reads a private key file: trusted like ReadTrusted and readable by its owner alone.
func ReadPrivate(path string) ([]byte, error) {
	return readChecked(path, true)
}

func readChecked(path string, private bool) ([]byte, error) {
	dir := filepath.Dir(path)
	dfi, err := os.Stat(dir)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", dir)
	}
	if err := CheckTrusted(dir, dfi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errcode.New(errcode.KeyFileUntrusted, "%s is a symlink; trust files are read only directly", path).With(errcode.DetailPath, path)
		}
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, errcode.New(errcode.KeyFileUntrusted, "%s is not a regular file", path).With(errcode.DetailPath, path)
	}
	if err := CheckTrusted(path, fi); err != nil {
		return nil, err
	}
	if private && fi.Mode().Perm()&0o077 != 0 {
		return nil, errcode.New(errcode.KeyFileUntrusted, "private key %s is readable by group or others (mode %04o); run chmod 600 on it", path, fi.Mode().Perm()).
			With(errcode.DetailPath, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	if len(data) > MaxFileSize {
		return nil, errcode.New(errcode.StatementTooLarge, "%s is over %d bytes", path, MaxFileSize).With(errcode.DetailPath, path)
	}
	return data, nil
}

// WritePrivate creates a private key file, mode 0600. It never overwrites: losing a key to a typo is
// worse than a refusal.
func WritePrivate(path, text string) error {
	return CreateExclusive(path, []byte(text+"\n"), 0o600)
}

// WritePublic writes a public key file, mode 0644, replacing nothing.
func WritePublic(path, text string) error {
	return CreateExclusive(path, []byte(text+"\n"), 0o644)
}

// CreateExclusive creates path holding data, failing with an error that wraps fs.ErrExist if it is
// already there. The file appears whole or not at all: it is written and synced under a temporary name
// and then linked into place, so a process that races to create or read the same file never sees half
// of it.
func CreateExclusive(path string, data []byte, mode os.FileMode) error {
	return place(path, data, mode, os.Link, "create")
}

// ReplaceFile replaces path with data, written and synced under a temporary name in the same folder
// and renamed over it: a reader sees the old file or the new one, never half of either.
func ReplaceFile(path string, data []byte, mode os.FileMode) error {
	return place(path, data, mode, os.Rename, "write")
}

// place writes data to a synced temporary file beside path and puts it at path with put.
func place(path string, data []byte, mode os.FileMode, put func(tmp, path string) error, verb string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-*")
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot %s %s", verb, path)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = put(tmp.Name(), path)
	}
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot %s %s", verb, path)
	}
	return nil
}

// AppendLines appends lines to an append-only trust file, creating it 0644 if needed, and syncs. Held
// keys and retirements are only ever appended: nothing rewrites what a node once trusted or revoked.
func AppendLines(path string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot append to %s", path)
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot append to %s", path)
	}
	return nil
}

// Lines splits a trust file into its meaningful lines: trimmed, without blanks or # comments.
func Lines(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// ReadPublisherPrivateFile reads a publisher key file written by WritePrivate.
func ReadPublisherPrivateFile(path string) (PublisherPrivate, error) {
	data, err := ReadPrivate(path)
	if err != nil {
		return PublisherPrivate{}, err
	}
	k, err := ParsePublisherPrivate(string(data))
	if err != nil {
		return PublisherPrivate{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ReadNodePrivateFile reads a node key file written by WritePrivate.
func ReadNodePrivateFile(path string) (NodePrivate, error) {
	data, err := ReadPrivate(path)
	if err != nil {
		return NodePrivate{}, err
	}
	k, err := ParseNodePrivate(string(data))
	if err != nil {
		return NodePrivate{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}
