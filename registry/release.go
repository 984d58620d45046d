package registry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// BundleFile is the statement bundle's name in a release directory; artifacts live beside it in the
// content-addressed layout sha256/<hex>.
const BundleFile = "statement.bundle.json"

// Release is a statement that passed verification.
type Release struct {
	Statement *statement.Statement
	Payload   []byte
	Digest    string // sha256 of Payload, the statement's identity
	Signer    keys.PublisherPublic
	Logged    bool

	learned     []string        // trust lines the key chain taught
	checkpoints checkpoint.Held // log checkpoints to hold once accepted

	// The subject indexes are built on first use: verification itself never needs them.
	indexed  sync.Once
	subjects map[string]string   // name -> digest
	pinned   map[string][]string // digest -> names
}

func (r *Release) index() {
	r.indexed.Do(func() {
		r.subjects = make(map[string]string, len(r.Statement.Subject))
		r.pinned = make(map[string][]string, len(r.Statement.Subject))
		for _, s := range r.Statement.Subject {
			r.subjects[s.Name] = s.SHA256()
			r.pinned[s.SHA256()] = append(r.pinned[s.SHA256()], s.Name)
		}
	})
}

// Subject returns the digest pinned for an artifact name.
func (r *Release) Subject(name string) (string, bool) {
	r.index()
	d, ok := r.subjects[name]
	return d, ok
}

// IsPinned reports whether any subject pins digest.
func (r *Release) IsPinned(digest string) bool {
	r.index()
	return len(r.pinned[digest]) > 0
}

// CheckArtifact checks data against the digest the statement pins for name.
func (r *Release) CheckArtifact(name string, data []byte) error {
	r.index()
	want, ok := r.subjects[name]
	if !ok {
		return errcode.New(errcode.ModuleNotPinned, "%s is not pinned by release %s", name, r.Statement.Predicate.Release).With(errcode.DetailArtifact, name)
	}
	if got := cas.Sum(data); got != want {
		return errcode.New(errcode.ModuleDigestMismatch, "%s hashes to %s; the statement pins %s", name, got, want).With(errcode.DetailArtifact, name)
	}
	return nil
}

// Module returns the module-table row for kind and name.
func (r *Release) Module(kind manifest.Kind, name string) (statement.Module, bool) {
	for _, m := range r.Statement.Predicate.Modules {
		if m.Kind == kind && m.Name == name {
			return m, true
		}
	}
	return statement.Module{}, false
}

// Modules returns the module table.
func (r *Release) Modules() []statement.Module { return r.Statement.Predicate.Modules }

// LoadModule reads a module's manifest and artifact from store, checks both against the digests the
// statement pins, and checks that the manifest describes the row that pinned it. The bytes returned
// are the bytes hashed: compile or execute exactly these.
func (r *Release) LoadModule(store *cas.Store, kind manifest.Kind, name string) (*manifest.Manifest, []byte, error) {
	row, ok := r.Module(kind, name)
	if !ok {
		return nil, nil, errcode.New(errcode.ModuleNotPinned, "%s %s is not in release %s", kind, name, r.Statement.Predicate.Release).
			With(errcode.DetailModule, name)
	}
	m, err := r.LoadManifest(store, row)
	if err != nil {
		return nil, nil, err
	}
	data, err := store.Get(row.Module)
	if err != nil {
		return nil, nil, err
	}
	return m, data, nil
}

// LoadManifest reads the manifest of a row of the module table from store, checks it against the
// digest the statement pins, and checks that it describes that row and pins the row's module. The
// module's own bytes are not read: LoadModule reads them for a caller that runs them.
func (r *Release) LoadManifest(store *cas.Store, row statement.Module) (*manifest.Manifest, error) {
	raw, err := store.Get(row.Manifest)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		return nil, err
	}
	if m.Name != row.Name || m.Kind != row.Kind || m.Version != row.Version || m.Class != row.Class {
		return nil, errcode.New(errcode.StatementInvalid, "manifest %s describes %s %s@%s, the statement lists %s %s@%s",
			row.Manifest, m.Kind, m.Name, m.Version, row.Kind, row.Name, row.Version).With(errcode.DetailModule, row.Name)
	}
	if m.Module.SHA256 != row.Module {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "manifest of %s pins module %s, the statement %s", row.Name, m.Module.SHA256, row.Module).
			With(errcode.DetailModule, row.Name)
	}
	return m, nil
}

// VerifyDir verifies a release directory completely: the statement (as Verify), then every artifact
// on disk against its subject, that nothing unpinned lies in the store, and that every manifest matches
// its row of the module table. On success it also accepts the release unless dryRun.
func (t *Trust) VerifyDir(dir string, now time.Time, dryRun bool) (*Release, *Report, error) {
	rep := &Report{}
	order := append(append([]string{}, statementChecks...), CheckDigests, CheckPinning)
	data, err := readBundle(dir)
	if err != nil {
		return nil, rep, rep.fail(CheckParse, err, after(CheckParse, order)...)
	}
	rel, err := t.verify(data, now, rep, order)
	if err != nil {
		return nil, rep, err
	}
	store, err := cas.Open(dir)
	if err != nil {
		return nil, rep, rep.fail(CheckDigests, err, CheckPinning)
	}
	for _, s := range rel.Statement.Subject {
		if err := store.Verify(s.SHA256()); err != nil {
			return nil, rep, rep.fail(CheckDigests, errcode.From(err, errcode.IOFailed).With(errcode.DetailArtifact, s.Name), CheckPinning)
		}
	}
	for _, row := range rel.Modules() {
		if _, err := rel.LoadManifest(store, row); err != nil {
			return nil, rep, rep.fail(CheckDigests, err, CheckPinning)
		}
	}
	rep.pass(CheckDigests, "%d artifacts match their subjects", len(rel.Statement.Subject))
	if err := checkNothingUnpinned(store.Root(), rel); err != nil {
		return nil, rep, rep.fail(CheckPinning, err)
	}
	rep.pass(CheckPinning, "every file in the store is pinned")
	if !dryRun {
		if err := t.Accept(rel); err != nil {
			return nil, rep, err
		}
	}
	return rel, rep, nil
}

// checkNothingUnpinned refuses a release directory whose store holds a file no subject pins: an
// unpinned file is never loaded, and shipping one is a sign of a tampered or careless release.
func checkNothingUnpinned(root string, rel *Release) error {
	entries, err := os.ReadDir(filepath.Join(root, "sha256"))
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot list the release store")
	}
	for _, e := range entries {
		if !rel.IsPinned(e.Name()) {
			return errcode.New(errcode.ModuleNotPinned, "sha256/%s is in the release but no subject pins it", e.Name()).With(errcode.DetailFile, e.Name())
		}
	}
	return nil
}

func readBundle(dir string) ([]byte, error) {
	path := filepath.Join(dir, BundleFile)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errcode.Wrap(err, errcode.StatementMalformed, "%s has no %s", dir, BundleFile).With(errcode.DetailLayer, "bundle")
		}
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	if fi.Size() > statement.MaxBundleSize {
		return nil, errcode.New(errcode.StatementTooLarge, "%s is %d bytes, over the %d-byte cap", path, fi.Size(), statement.MaxBundleSize).
			With(errcode.DetailLayer, "bundle")
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	return data, nil
}

// OpenRelease verifies and accepts the release in dir with the trust directory trustDir and returns it
// with its store, ready for LoadModule.
func OpenRelease(dir, trustDir string, now time.Time) (*Release, *cas.Store, error) {
	t, err := OpenTrust(trustDir)
	if err != nil {
		return nil, nil, err
	}
	data, err := readBundle(dir)
	if err != nil {
		return nil, nil, err
	}
	rel, err := t.Verify(data, now)
	if err != nil {
		return nil, nil, err
	}
	if err := t.Accept(rel); err != nil {
		return nil, nil, err
	}
	store, err := cas.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	return rel, store, nil
}
