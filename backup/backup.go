// Package backup is the format of a node's backups in an S3-compatible bucket: where a run's objects
// lie, how they are encrypted, and the manifest and index that describe them. The node writes it
// (backup/archive, through the word host), the plane reads the manifests (it cannot decrypt anything
// else), and a person restores from it by hand with age, tar and pg_restore.
//
// # Layout
//
// Every key of a node lies under the target's prefix and the node's id; every run under its own id:
//
//	<prefix>/<node>/<run>/000001.age ...    the run's objects, in the order they were written
//	<prefix>/<node>/<run>/manifest.json     written last: a run without it is not a restore point
//
// A run id is the UTC time the plane granted it, to the millisecond, and eight hex digits
// (20260903T020000.000Z-1a2b3c4d), so ids sort in time order and never repeat. No key is ever written twice: the plane presigns each
// PUT with "If-None-Match: *".
//
// # Objects
//
// Each object is one age file (https://age-encryption.org/v1) encrypted to the manifest's recipients,
// X25519 only: the fleet's recovery key and the node's own key. An object holds one segment of a
// stream: the segments of a stream, decrypted one by one and concatenated in seq order, give back the
// stream. A run has these streams:
//
//   - files: one tar archive (POSIX.1-2001 pax) of the files the run stored, named by their path
//     beneath "/" without the leading slash (srv/data/a.txt). A full run stores every file; an
//     incremental one only those that changed since its parent.
//   - database: one pg_dump custom-format archive per database (Object.Database names it), dumped
//     whole by every run.
//   - index: the run's index (Index), JSON lines, in one stream of its own.
//
// # Manifest and index
//
// The manifest (Manifest, JSON, not encrypted) names the run, its chain and every object with its
// size and the sha256 of its bytes as stored: the plane checks a run against a listing of the bucket
// without any key. The index (encrypted) lists every file of the tree as the run saw it, changed or
// not, with its sha256 and the run whose files stream holds its content, so that the newest index of
// a chain describes the whole tree and restoring reads each file once.
package backup

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"
)

// Schemas this package writes and reads.
const (
	ManifestSchema = "lexicon/backup-manifest/v1"
	IndexSchema    = "lexicon/backup-index/v1"
)

// ManifestName is the base name of a run's manifest key.
const ManifestName = "manifest.json"

// Kinds of run.
const (
	KindFull        = "full"
	KindIncremental = "incremental"
)

// Roles of an object: which stream it is a segment of.
const (
	RoleFiles    = "files"
	RoleDatabase = "database"
	RoleIndex    = "index"
)

// runTime is the layout of a run id's time.
const runTime = "20060102T150405.000Z"

// NewRunID returns a fresh run id for a run granted at now, later than after (a run it builds on, or
// ""): a chain is in id order even when the clock is not.
func NewRunID(now time.Time, after string) string {
	if t, ok := RunTime(after); ok && !now.After(t) {
		now = t.Add(time.Millisecond)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format(runTime) + "-" + hex.EncodeToString(b[:])
}

// ValidRunID reports whether s is a run id: a UTC time and eight lowercase hex digits.
func ValidRunID(s string) bool {
	t, suffix, ok := strings.Cut(s, "-")
	if !ok || len(suffix) != 8 || len(t) != len(runTime) {
		return false
	}
	if _, err := time.Parse(runTime, t); err != nil {
		return false
	}
	for _, c := range []byte(suffix) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RunTime is when the run was granted, from its id.
func RunTime(run string) (time.Time, bool) {
	t, _, _ := strings.Cut(run, "-")
	tm, err := time.Parse(runTime, t)
	return tm, err == nil
}

// ValidNodeID reports whether s can be a node's folder: 1 to 128 letters, digits, '-', '_' or '.',
// not starting with '.'.
func ValidNodeID(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// NodePrefix is the folder of a node's runs under a target's prefix, ending in "/".
func NodePrefix(prefix, node string) string {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return node + "/"
	}
	return p + "/" + node + "/"
}

// RunPrefix is the folder of one run, ending in "/".
func RunPrefix(prefix, node, run string) string { return NodePrefix(prefix, node) + run + "/" }

// ObjectKey is the key of a run's i-th object (from 1).
func ObjectKey(prefix, node, run string, i int) string {
	return fmt.Sprintf("%s%06d.age", RunPrefix(prefix, node, run), i)
}

// ManifestKey is the key of a run's manifest.
func ManifestKey(prefix, node, run string) string { return RunPrefix(prefix, node, run) + ManifestName }

// RunOfKey returns the run a key under a node's prefix belongs to, and whether the key is that run's
// manifest.
func RunOfKey(nodePrefix, key string) (run string, manifest bool, ok bool) {
	rest, found := strings.CutPrefix(key, nodePrefix)
	if !found {
		return "", false, false
	}
	run, name, found := strings.Cut(rest, "/")
	if !found || !ValidRunID(run) || name == "" || strings.Contains(name, "/") {
		return "", false, false
	}
	return run, name == ManifestName, true
}

// validKeyUnder reports whether key is a plain object key directly under prefix.
func validKeyUnder(prefix, key string) bool {
	name, ok := strings.CutPrefix(key, prefix)
	return ok && name != "" && !strings.Contains(name, "/") && path.Clean(key) == key
}
