package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// DefaultExpiry is how long a release stays valid when the publisher names no expiry.
const DefaultExpiry = 90 * 24 * time.Hour

// BuildOptions describe one release to build.
type BuildOptions struct {
	Key          keys.PublisherPrivate
	ModulesDir   string // one folder per module: manifest.json and the file it names
	Release      string // semver
	Sequence     uint64
	PreviousDir  string // the release this one follows, for contracts, sequence and key chain
	HistoryDir   string // a folder of earlier release folders: every word is checked against each
	Expires      time.Duration
	SourceCommit string
	Floor        string
	Chain        []statement.ChainEntry // key-chain entries to add
	Agents       map[string]string      // "linux/amd64" -> agent binary path
	OutDir       string
	Now          time.Time
	Progress     func(format string, args ...any)
}

// BuildResult describes a written release.
type BuildResult struct {
	Release   string          `json:"release"`
	Sequence  uint64          `json:"sequence"`
	Statement string          `json:"statement"`
	Publisher string          `json:"publisher"`
	ExpiresAt time.Time       `json:"expires_at"`
	Modules   []ModuleSummary `json:"modules"`
	Subjects  int             `json:"subjects"`
	OutDir    string          `json:"out"`
}

// ModuleSummary is one module as built.
type ModuleSummary struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
	Class   string `json:"class,omitempty"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
}

type builtModule struct {
	m            *manifest.Manifest
	manifestJSON []byte
	artifact     []byte
}

// Build collects every module, checks contracts against the previous release, signs the statement and
// writes the release directory. Nothing is written unless every check passes.
func Build(o BuildOptions) (*BuildResult, error) {
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Expires == 0 {
		o.Expires = DefaultExpiry
	}
	if o.Sequence == 0 {
		return nil, errcode.New(errcode.UsageInvalid, "--sequence must be 1 or more")
	}
	if _, err := os.Stat(filepath.Join(o.OutDir, BundleFile)); err == nil {
		return nil, errcode.New(errcode.UsageInvalid, "%s already holds a release; a signed release is never overwritten", o.OutDir)
	}
	mods, err := collectModules(o.ModulesDir, o.Progress)
	if err != nil {
		return nil, err
	}
	chain := o.Chain
	if o.PreviousDir != "" {
		prev, prevStore, err := readUnverified(o.PreviousDir)
		if err != nil {
			return nil, err
		}
		if o.Sequence <= prev.Predicate.Sequence {
			return nil, errcode.New(errcode.StatementRollback, "sequence %d must be above the previous release's %d", o.Sequence, prev.Predicate.Sequence)
		}
		if err := checkContracts(prev, prevStore, mods); err != nil {
			return nil, err
		}
		chain = mergeChain(prev.Predicate.KeyChain, o.Chain)
	}
	if o.HistoryDir != "" {
		if err := checkHistory(o.HistoryDir, o.Sequence, mods); err != nil {
			return nil, err
		}
	}

	st := &statement.Statement{
		Type:          statement.StatementType,
		PredicateType: statement.PredicateType,
		Predicate: statement.Predicate{
			Release:      o.Release,
			Sequence:     o.Sequence,
			IssuedAt:     o.Now.UTC().Truncate(time.Second),
			ExpiresAt:    o.Now.UTC().Truncate(time.Second).Add(o.Expires),
			SourceCommit: o.SourceCommit,
			Floor:        o.Floor,
			Publisher:    o.Key.Public(),
			KeyChain:     chain,
			Modules:      []statement.Module{},
		},
	}
	blobs := map[string][]byte{}
	res := &BuildResult{Release: o.Release, Sequence: o.Sequence, Publisher: o.Key.Public().Fingerprint(), OutDir: o.OutDir}
	for _, bm := range mods {
		m := bm.m
		md, ad := cas.Sum(bm.manifestJSON), m.Module.SHA256
		st.Subject = append(st.Subject,
			statement.NewSubject(m.SubjectName(), ad), statement.NewSubject(m.ManifestSubjectName(), md))
		st.Predicate.Modules = append(st.Predicate.Modules, statement.Module{
			Name: m.Name, Kind: m.Kind, Version: m.Version, Class: m.Class, Manifest: md, Module: ad,
		})
		blobs[md], blobs[ad] = bm.manifestJSON, bm.artifact
		res.Modules = append(res.Modules, ModuleSummary{Name: m.Name, Kind: string(m.Kind), Version: m.Version, Class: string(m.Class), SHA256: ad, Size: m.Module.Size})
	}
	for _, platform := range sortedKeys(o.Agents) {
		data, err := os.ReadFile(o.Agents[platform])
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read agent binary for %s", platform)
		}
		o.Progress("agent %s: %s", platform, humanSize(int64(len(data))))
		d := cas.Sum(data)
		st.Subject = append(st.Subject, statement.NewSubject("agent/"+strings.ReplaceAll(platform, "/", "-"), d))
		blobs[d] = data
	}
	payload, err := statement.Encode(st)
	if err != nil {
		return nil, err
	}
	if _, err := statement.Decode(payload); err != nil { // the builder holds itself to the verifier's rules
		return nil, err
	}
	b, err := statement.Sign(payload, o.Key)
	if err != nil {
		return nil, err
	}
	bundleJSON, err := statement.MarshalBundle(b)
	if err != nil {
		return nil, err
	}
	store, err := cas.Open(o.OutDir)
	if err != nil {
		return nil, err
	}
	for _, d := range sortedKeys(blobs) {
		if err := store.PutAs(d, blobs[d]); err != nil {
			return nil, err
		}
	}
	if err := keys.ReplaceFile(filepath.Join(o.OutDir, BundleFile), bundleJSON, 0o644); err != nil {
		return nil, err
	}
	res.Statement = cas.Sum(payload)
	res.ExpiresAt = st.Predicate.ExpiresAt
	res.Subjects = len(st.Subject)
	return res, nil
}

// collectModules reads every module folder, fills in each manifest's module digest and size, and
// refuses a manifest whose stated digest does not match its file.
func collectModules(dir string, progress func(string, ...any)) ([]builtModule, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read modules folder %s", dir)
	}
	var out []builtModule
	seen := map[string]string{}
	for i, e := range entries {
		if !e.IsDir() {
			continue
		}
		folder := filepath.Join(dir, e.Name())
		raw, err := os.ReadFile(filepath.Join(folder, "manifest.json"))
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "module folder %s has no readable manifest.json", folder)
		}
		m, err := manifest.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", folder, err)
		}
		id := string(m.Kind) + "/" + m.Name
		if other, dup := seen[id]; dup {
			return nil, errcode.New(errcode.StatementInvalid, "%s %s is in both %s and %s", m.Kind, m.Name, other, folder)
		}
		seen[id] = folder
		artifact, err := os.ReadFile(filepath.Join(folder, m.Module.File))
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "%s: cannot read module file %s", folder, m.Module.File)
		}
		sum := cas.Sum(artifact)
		if m.Module.SHA256 != "" && m.Module.SHA256 != sum {
			return nil, errcode.New(errcode.ModuleDigestMismatch, "%s: manifest pins %s but %s hashes to %s", folder, m.Module.SHA256, m.Module.File, sum).
				With(errcode.DetailModule, m.Name)
		}
		if m.Module.Size != 0 && m.Module.Size != int64(len(artifact)) {
			return nil, errcode.New(errcode.ModuleDigestMismatch, "%s: manifest says %d bytes, %s has %d", folder, m.Module.Size, m.Module.File, len(artifact))
		}
		m.Module.SHA256, m.Module.Size = sum, int64(len(artifact))
		canonical, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, errcode.Wrap(err, errcode.ManifestInvalid, "%s: manifest cannot be encoded", folder)
		}
		progress("[%d/%d] %s %s@%s: %s", i+1, len(entries), m.Kind, m.Name, m.Version, humanSize(int64(len(artifact))))
		out = append(out, builtModule{m: m, manifestJSON: append(canonical, '\n'), artifact: artifact})
	}
	if len(out) == 0 {
		return nil, errcode.New(errcode.UsageInvalid, "modules folder %s holds no module folders", dir)
	}
	return out, nil
}

// readUnverified reads a release directory's statement without trust: the publisher's own previous
// release, consulted for contracts and sequence, not for loading anything.
func readUnverified(dir string) (*statement.Statement, *cas.Store, error) {
	data, err := readBundle(dir)
	if err != nil {
		return nil, nil, err
	}
	st, err := statement.DecodeBundle(data)
	if err != nil {
		return nil, nil, err
	}
	store, err := cas.Open(dir)
	return st, store, err
}

// checkContracts refuses a release in which a word of the previous release lost or changed its
// contract.
func checkContracts(prev *statement.Statement, prevStore *cas.Store, mods []builtModule) error {
	next := map[string]*manifest.Manifest{}
	for _, bm := range mods {
		if bm.m.Kind == manifest.KindWord {
			next[bm.m.Name] = bm.m
		}
	}
	for _, row := range prev.Predicate.Modules {
		nm, ok := next[row.Name]
		if row.Kind != manifest.KindWord || !ok {
			continue
		}
		raw, err := prevStore.Get(row.Manifest)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errcode.Has(err, errcode.ModuleNotFound) {
				return errcode.Wrap(err, errcode.ModuleNotFound, "previous release lacks the manifest of %s", row.Name)
			}
			return err
		}
		old, err := manifest.Parse(raw)
		if err != nil {
			return fmt.Errorf("previous release, manifest of %s: %w", row.Name, err)
		}
		if err := manifest.CheckContract(old, nm); err != nil {
			return err
		}
	}
	return nil
}

// checkHistory checks every word against every release folder in dir, not only the one just before:
// a word dropped from one release and brought back later with another class or other params would
// otherwise pass, since the release just before no longer holds it.
func checkHistory(dir string, seq uint64, mods []builtModule) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot read history folder %s", dir)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue // a note or checksum file beside the releases is not a release
		}
		rd := filepath.Join(dir, e.Name())
		st, store, err := readUnverified(rd)
		if err != nil {
			return fmt.Errorf("history release %s: %w", rd, err)
		}
		if seq <= st.Predicate.Sequence {
			return errcode.New(errcode.StatementRollback, "sequence %d must be above history release %s's %d", seq, rd, st.Predicate.Sequence)
		}
		if err := checkContracts(st, store, mods); err != nil {
			return errcode.From(err, errcode.ContractBroken).With("release", st.Predicate.Release).With("release_dir", rd)
		}
	}
	return nil
}

// mergeChain keeps the previous chain in order and appends new entries not already in it.
func mergeChain(prev, add []statement.ChainEntry) []statement.ChainEntry {
	out := append([]statement.ChainEntry{}, prev...)
	have := map[string]bool{}
	for _, e := range prev {
		have[e.Signature] = true
	}
	for _, e := range add {
		if !have[e.Signature] {
			out = append(out, e)
			have[e.Signature] = true
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
