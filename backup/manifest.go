package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"filippo.io/age"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Caps on what a manifest may hold.
const (
	MaxManifestSize = 16 << 20
	MaxObjects      = 100_000
	MaxChain        = 1_000
	MaxRecipients   = 16
	// MaxSegment is the most stream bytes one object may hold: a reader holds an object in memory
	// while it checks its digest, so a manifest may not make it hold more. MaxObjectSize allows for
	// age's header and tags on top.
	MaxSegment    = 256 << 20
	MaxObjectSize = MaxSegment + 1<<20
)

// Manifest describes one run: what it is, the chain it restores with, and every object it wrote. It is
// written last and is not encrypted.
type Manifest struct {
	Schema string `json:"schema"`
	Node   string `json:"node"`
	Run    string `json:"run"`
	Kind   string `json:"kind"`
	// Chain is the runs a restore of this run reads, the full run first and this run last.
	Chain      []string  `json:"chain"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Recipients []string  `json:"recipients"`
	Objects    []Object  `json:"objects"`
	Files      Files     `json:"files"`
	// Databases are the databases dumped, each with its dump's size.
	Databases []Database `json:"databases,omitempty"`
}

// Object is one object of a run: a segment of one of its streams.
type Object struct {
	Key  string `json:"key"`
	Role string `json:"role"`
	// Database names the database whose dump the segment holds (role database only).
	Database string `json:"database,omitempty"`
	// Seq is the segment's place in its stream, from 1.
	Seq int `json:"seq"`
	// Size and SHA256 are of the object as stored (encrypted); Plain is the stream bytes it holds.
	Size   int64  `json:"size"`
	Plain  int64  `json:"plain"`
	SHA256 string `json:"sha256"`
}

// Files sums up the tree: every file the index lists, and those this run stored.
type Files struct {
	Count       int64 `json:"count"`
	Bytes       int64 `json:"bytes"`
	Stored      int64 `json:"stored"`
	StoredBytes int64 `json:"stored_bytes"`
}

// Database is one database a run dumped.
type Database struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Parent is the run this one builds on, empty for a full run.
func (m *Manifest) Parent() string {
	if len(m.Chain) < 2 {
		return ""
	}
	return m.Chain[len(m.Chain)-2]
}

// Stream returns the objects of one stream in seq order: role files or index (database empty), or one
// database's dump.
func (m *Manifest) Stream(role, database string) []Object {
	var out []Object
	for _, o := range m.Objects {
		if o.Role == role && o.Database == database {
			out = append(out, o)
		}
	}
	return out
}

// Size is the bytes of every object of the run as stored.
func (m *Manifest) Size() int64 {
	var n int64
	for _, o := range m.Objects {
		n += o.Size
	}
	return n
}

// Marshal encodes the manifest as it is written to the bucket.
func (m *Manifest) Marshal() ([]byte, error) {
	return json.Marshal(m, jsontext.WithIndent("  "))
}

func manifestInvalid(field, format string, args ...any) error {
	return errcode.New(errcode.BackupManifestInvalid, "manifest: "+format, args...).With(errcode.DetailField, field)
}

// ParseManifest decodes and checks a manifest read from a bucket: strictly (unknown fields and repeated
// keys refused), capped at MaxManifestSize, and whole (every rule of the format holds), or
// backup.manifest_invalid naming the field.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, manifestInvalid("", "%d bytes, over the %d-byte cap", len(data), MaxManifestSize)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m, json.RejectUnknownMembers(true)); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) && errors.Is(se.Err, json.ErrUnknownName) {
			return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "manifest has an unknown field").With(errcode.DetailField, string(se.JSONPointer))
		}
		return nil, errcode.Wrap(err, errcode.BackupManifestInvalid, "manifest is not valid JSON")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks every rule of the format.
func (m *Manifest) Validate() error {
	switch {
	case m.Schema != ManifestSchema:
		return manifestInvalid("schema", "schema %q is not %s", m.Schema, ManifestSchema)
	case !ValidNodeID(m.Node):
		return manifestInvalid("node", "node %q is not a node id", m.Node)
	case !ValidRunID(m.Run):
		return manifestInvalid("run", "run %q is not a run id", m.Run)
	case m.Finished.Before(m.Started):
		return manifestInvalid("finished", "the run finished before it started")
	}
	if err := validChain("chain", m.Run, m.Kind, m.Chain); err != nil {
		return err
	}
	if len(m.Recipients) == 0 || len(m.Recipients) > MaxRecipients {
		return manifestInvalid("recipients", "%d recipients; a run has 1 to %d", len(m.Recipients), MaxRecipients)
	}
	for i, r := range m.Recipients {
		if _, err := age.ParseX25519Recipient(r); err != nil {
			return manifestInvalid(fmt.Sprintf("recipients/%d", i), "not an age X25519 recipient")
		}
	}
	if len(m.Objects) == 0 || len(m.Objects) > MaxObjects {
		return manifestInvalid("objects", "%d objects; a run has 1 to %d", len(m.Objects), MaxObjects)
	}
	keys := map[string]bool{}
	next := map[[2]string]int{}
	for i, o := range m.Objects {
		f := fmt.Sprintf("objects/%d", i)
		switch {
		case keys[o.Key]:
			return manifestInvalid(f+"/key", "key %q appears twice", o.Key)
		case path.Clean(o.Key) != o.Key || path.Base(path.Dir(o.Key)) != m.Run || path.Base(o.Key) == ManifestName:
			return manifestInvalid(f+"/key", "key %q is not an object of run %s", o.Key, m.Run)
		case o.Role != RoleFiles && o.Role != RoleDatabase && o.Role != RoleIndex:
			return manifestInvalid(f+"/role", "role %q is not files, database or index", o.Role)
		case (o.Role == RoleDatabase) != (o.Database != ""):
			return manifestInvalid(f+"/database", "a database segment names its database, and only it")
		case o.Database != "" && !ValidDatabaseName(o.Database):
			return manifestInvalid(f+"/database", "%q is not a database name", o.Database)
		case o.Size < 0 || o.Plain < 0 || o.Size > MaxObjectSize || o.Plain > MaxSegment:
			return manifestInvalid(f+"/size", "sizes must lie between 0 and %d bytes", MaxObjectSize)
		case !validSHA256(o.SHA256):
			return manifestInvalid(f+"/sha256", "sha256 must be 64 lowercase hex digits")
		}
		keys[o.Key] = true
		stream := [2]string{o.Role, o.Database}
		next[stream]++
		if o.Seq != next[stream] {
			return manifestInvalid(f+"/seq", "segment %d of its stream comes where %d should", o.Seq, next[stream])
		}
	}
	if next[[2]string{RoleIndex, ""}] == 0 {
		return manifestInvalid("objects", "the run has no index")
	}
	if m.Files.Count < 0 || m.Files.Bytes < 0 || m.Files.Stored < 0 || m.Files.StoredBytes < 0 {
		return manifestInvalid("files", "counts must not be negative")
	}
	dbs := map[string]bool{}
	for i, d := range m.Databases {
		switch {
		case !ValidDatabaseName(d.Name) || dbs[d.Name]:
			return manifestInvalid(fmt.Sprintf("databases/%d/name", i), "%q is not a database name, or appears twice", d.Name)
		case next[[2]string{RoleDatabase, d.Name}] == 0:
			return manifestInvalid(fmt.Sprintf("databases/%d", i), "database %s has no segments", d.Name)
		case d.Bytes < 0:
			return manifestInvalid(fmt.Sprintf("databases/%d/bytes", i), "bytes must not be negative")
		}
		dbs[d.Name] = true
	}
	for s := range next {
		if s[0] == RoleDatabase && !dbs[s[1]] {
			return manifestInvalid("databases", "database %s has segments but is not listed", s[1])
		}
	}
	return nil
}

// validChain checks a chain of run ids for run of kind: ascending, ending in run, one long for a full
// run and longer for an incremental one.
func validChain(field, run, kind string, chain []string) error {
	switch kind {
	case KindFull:
		if len(chain) != 1 {
			return manifestInvalid(field, "a full run's chain is the run alone")
		}
	case KindIncremental:
		if len(chain) < 2 {
			return manifestInvalid(field, "an incremental run's chain holds a full run and the run")
		}
	default:
		return manifestInvalid("kind", "kind %q is not full or incremental", kind)
	}
	if len(chain) > MaxChain {
		return manifestInvalid(field, "a chain of %d runs is over the cap of %d", len(chain), MaxChain)
	}
	for i, r := range chain {
		if !ValidRunID(r) {
			return manifestInvalid(fmt.Sprintf("%s/%d", field, i), "%q is not a run id", r)
		}
		if i > 0 && r <= chain[i-1] {
			return manifestInvalid(fmt.Sprintf("%s/%d", field, i), "the chain is not in run order")
		}
	}
	if chain[len(chain)-1] != run {
		return manifestInvalid(field, "the chain does not end with the run")
	}
	return nil
}

// ValidDatabaseName reports whether s can name a database here: 1 to 63 letters, digits, '_', '-',
// '.' or '$', starting with a letter, digit or '_'. pg_dump reads a name holding '=' or a URI scheme as
// connection settings, so nothing but a plain name gets that far.
func ValidDatabaseName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, c := range []byte(s) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
		if i > 0 {
			ok = ok || c == '-' || c == '.' || c == '$'
		}
		if !ok {
			return false
		}
	}
	return true
}

// ScratchDatabase is the name of the database a restore ("restore") or a verify ("verify") of database
// by node works in: one name per node, database and purpose, so that one left behind by a killed run is
// found, and dropped, by the node's next, while two nodes that verify the same database on one server
// at once each work in their own.
func ScratchDatabase(purpose, node, database string) string {
	sum := sha256.Sum256([]byte(node + "\x00" + database))
	return "lexicon_" + purpose + "_" + hex.EncodeToString(sum[:8])
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ChainOf returns the manifests of run's chain, the full run first, from the manifests of one node,
// or backup.object_missing naming the first run of the chain that is not among them.
func ChainOf(have map[string]*Manifest, run string) ([]*Manifest, error) {
	m, ok := have[run]
	if !ok {
		return nil, errcode.New(errcode.BackupObjectMissing, "run %s has no manifest", run).With(errcode.DetailName, run)
	}
	out := make([]*Manifest, 0, len(m.Chain))
	for _, r := range m.Chain {
		c, ok := have[r]
		if !ok {
			return nil, errcode.New(errcode.BackupObjectMissing, "run %s builds on %s, which has no manifest", run, r).With(errcode.DetailName, r)
		}
		if len(c.Chain) > len(m.Chain) || !slices.Equal(c.Chain, m.Chain[:len(c.Chain)]) {
			return nil, errcode.New(errcode.BackupManifestInvalid, "run %s is not the chain of %s it should be", r, run).With(errcode.DetailName, r)
		}
		out = append(out, c)
	}
	return out, nil
}
