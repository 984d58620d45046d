package backup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Caps on an index.
const (
	MaxIndexEntries = 4 << 20
	MaxIndexLine    = 64 << 10
	MaxRoots        = 64
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// IndexHeader is an index's first line.
type IndexHeader struct {
	Schema string   `json:"schema"`
	Node   string   `json:"node"`
	Run    string   `json:"run"`
	Kind   string   `json:"kind"`
	Chain  []string `json:"chain"`
	// Roots are the folders the run backed up, as absolute paths.
	Roots []string `json:"roots"`
}

// Entry is one file, folder or symlink of the tree. Path is beneath "/" without the leading slash.
// Dev, Ino and CTimeNS are what the node compares to tell an unchanged file without reading it.
type Entry struct {
	Path    string `json:"path"`
	Type    string `json:"type"`
	Size    int64  `json:"size,omitempty"`
	Mode    uint32 `json:"mode"` // permission bits with setuid, setgid and sticky (07777)
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	MTimeNS int64  `json:"mtime_ns"`
	CTimeNS int64  `json:"ctime_ns,omitempty"`
	Dev     uint64 `json:"dev,omitempty"`
	Ino     uint64 `json:"ino,omitempty"`
	// SHA256 is a file's content digest.
	SHA256 string `json:"sha256,omitempty"`
	// Target is a symlink's target, as written.
	Target string `json:"target,omitempty"`
	// Run is the run whose files stream holds a file's content.
	Run string `json:"run,omitempty"`
}

// Index is a run's whole tree, in the order the run walked it.
type Index struct {
	Header  IndexHeader
	Entries []Entry
}

// Lookup returns the entries by path.
func (x *Index) Lookup() map[string]*Entry {
	m := make(map[string]*Entry, len(x.Entries))
	for i := range x.Entries {
		m[x.Entries[i].Path] = &x.Entries[i]
	}
	return m
}

// WriteTo writes the index as JSON lines: the header, then one entry a line.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int64
	line := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		k, err := bw.Write(b)
		n += int64(k)
		return err
	}
	if err := line(x.Header); err != nil {
		return n, err
	}
	for i := range x.Entries {
		if err := line(&x.Entries[i]); err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

func indexInvalid(field, format string, args ...any) error {
	return errcode.New(errcode.BackupManifestInvalid, "index: "+format, args...).With(errcode.DetailField, field)
}

// ReadIndex decodes and checks an index: strictly, line by line (each at most MaxIndexLine bytes, at
// most MaxIndexEntries entries), or backup.manifest_invalid naming the line.
func ReadIndex(r io.Reader) (*Index, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxIndexLine)
	var x Index
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "index: cannot read its header")
		}
		return nil, indexInvalid("line/1", "the index is empty")
	}
	if err := decodeLine(sc.Bytes(), &x.Header); err != nil {
		return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "index: the header does not decode").With(errcode.DetailField, "line/1")
	}
	if err := x.Header.validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for n := 2; sc.Scan(); n++ {
		if len(x.Entries) >= MaxIndexEntries {
			return nil, indexInvalid("", "over %d entries", MaxIndexEntries)
		}
		var e Entry
		field := fmt.Sprintf("line/%d", n)
		if err := decodeLine(sc.Bytes(), &e); err != nil {
			return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "index: %s does not decode", field).With(errcode.DetailField, field)
		}
		if err := x.Header.check(field, &e); err != nil {
			return nil, err
		}
		if seen[e.Path] {
			return nil, indexInvalid(field, "%q appears twice", e.Path)
		}
		seen[e.Path] = true
		x.Entries = append(x.Entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, indexInvalid("", "a line is over %d bytes", MaxIndexLine)
		}
		return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "index: cannot read it")
	}
	return &x, nil
}

func decodeLine(b []byte, v any) error {
	return json.Unmarshal(bytes.TrimSpace(b), v, json.RejectUnknownMembers(true))
}

func (h *IndexHeader) validate() error {
	switch {
	case h.Schema != IndexSchema:
		return indexInvalid("schema", "schema %q is not %s", h.Schema, IndexSchema)
	case !ValidNodeID(h.Node):
		return indexInvalid("node", "node %q is not a node id", h.Node)
	case !ValidRunID(h.Run):
		return indexInvalid("run", "run %q is not a run id", h.Run)
	case len(h.Roots) > MaxRoots:
		return indexInvalid("roots", "over %d roots", MaxRoots)
	}
	if err := validChain("chain", h.Run, h.Kind, h.Chain); err != nil {
		return err
	}
	for i, r := range h.Roots {
		if !ValidRoot(r) {
			return indexInvalid(fmt.Sprintf("roots/%d", i), "root %q is not an absolute clean path below /", r)
		}
	}
	return nil
}

// check holds an entry to the format and to the header's roots and chain.
func (h *IndexHeader) check(field string, e *Entry) error {
	if !ValidEntryPath(e.Path) {
		return indexInvalid(field, "path %q is not a clean path beneath /", e.Path)
	}
	if !h.beneathRoot(e.Path) {
		return indexInvalid(field, "path %q is not beneath a root of the run", e.Path)
	}
	if e.Mode&^0o7777 != 0 || e.Size < 0 {
		return indexInvalid(field, "mode %o or size %d is out of range", e.Mode, e.Size)
	}
	switch e.Type {
	case TypeFile:
		if !validSHA256(e.SHA256) || !slices.Contains(h.Chain, e.Run) || e.Target != "" {
			return indexInvalid(field, "a file needs its sha256 and a run of the chain, and no target")
		}
	case TypeSymlink:
		if e.Target == "" || len(e.Target) > 4096 || strings.IndexByte(e.Target, 0) >= 0 || e.SHA256 != "" || e.Run != "" {
			return indexInvalid(field, "a symlink needs a target, and no sha256 or run")
		}
	case TypeDir:
		if e.SHA256 != "" || e.Run != "" || e.Target != "" || e.Size != 0 {
			return indexInvalid(field, "a folder has no size, sha256, run or target")
		}
	default:
		return indexInvalid(field, "type %q is not file, dir or symlink", e.Type)
	}
	return nil
}

func (h *IndexHeader) beneathRoot(p string) bool {
	for _, r := range h.Roots {
		rel := strings.TrimPrefix(r, "/")
		if p == rel || strings.HasPrefix(p, rel+"/") {
			return true
		}
	}
	return false
}

// ValidRoot reports whether r can be a root to back up: an absolute clean path other than "/".
func ValidRoot(r string) bool {
	return path.IsAbs(r) && path.Clean(r) == r && r != "/" && len(r) <= 4096 && strings.IndexByte(r, 0) < 0
}

// ValidEntryPath reports whether p is a path beneath "/" as an index and a tar stream name it: clean,
// relative, without ".." and without NUL, at most 4096 bytes.
func ValidEntryPath(p string) bool {
	return p != "" && p != "." && len(p) <= 4096 && !path.IsAbs(p) && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../") && strings.IndexByte(p, 0) < 0
}
