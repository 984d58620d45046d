package caps

import (
	"context"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// fsRemove unlinks one regular file beneath a declared root whose base name matches a declared pattern
// and whose modification time is at least min_age_s old. The folder holding it is resolved as fs.write
// resolves it (root reached from "/" without links, its ancestors root's alone), the file is examined
// with fstatat on that folder's descriptor without following a link, and unlinked by name from the same
// descriptor, so a folder renamed or a link planted between the check and the unlink cannot send the
// unlink anywhere else. What can still change between the two is the name's entry inside that folder,
// which only someone allowed to write the folder could do, and who could remove the file anyway.
func fsRemove(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSRemove
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	root, err := within(c.Cap, c.Paths, req.Path)
	if err != nil {
		return nil, err
	}
	if req.Path == root {
		return nil, denied(c.Cap, "the root %s itself cannot be removed", root).With(errcode.DetailPath, req.Path)
	}
	name := filepath.Base(req.Path)
	if !matchAny(c.Patterns, name) {
		return nil, denied(c.Cap, "%s matches no declared pattern", name).With(errcode.DetailPath, req.Path)
	}
	dirfd, err := openParent(c.Cap, root, req.Path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, denied(c.Cap, "%s is not a regular file", req.Path).With(errcode.DetailPath, req.Path)
	}
	minAge := time.Duration(c.MinAgeS) * time.Second
	mtime := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	if age := time.Since(mtime); age < minAge {
		return nil, denied(c.Cap, "%s was modified %s ago, under the declared minimum age %s", req.Path, age.Truncate(time.Second), minAge).
			With(errcode.DetailPath, req.Path).With("mtime", mtime.UTC().Format(time.RFC3339))
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	return capv1.FSRemoveResult{Size: st.Size, Allocated: st.Blocks * 512}, nil
}
