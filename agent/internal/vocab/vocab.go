// Package vocab keeps the node's vocabulary: exactly the words and recipes of the newest statement the
// node could verify with the keys it holds, with their manifests and modules cached by sha256.
package vocab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Fetcher gets artifacts from the plane (the channel's artifact route).
type Fetcher interface {
	Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error)
}

// Word is one word the node can run.
type Word struct {
	Manifest       *manifest.Manifest
	Module         string // sha256 of the module, as the statement pins it
	ManifestDigest string // sha256 of the manifest, as the statement pins it
}

// Recipe is one recipe the node runs: its manifest and the module digest the statement pins, verified
// exactly as a word's.
type Recipe = Word

// Vocabulary is the node's current vocabulary. It is safe for concurrent use.
type Vocabulary struct {
	trustDir string
	store    *cas.Store
	now      func() time.Time

	// afterSwitch, when set, runs between pointing current at a new statement and raising the trust
	// state to it: where tests kill the process.
	afterSwitch func()

	mu        sync.Mutex
	release   *registry.Release
	words     map[string]Word
	recipes   map[string]Recipe
	untrusted string // why the newest statement or some of its modules were refused
	// checkpoints are the log checkpoints the node holds, as claims report them.
	checkpoints []channel.Checkpoint

	// agentVersion is the running agent's; a statement whose floor is above it is verified and held
	// as the offer (the agent updates itself from it) but its vocabulary is not taken.
	agentVersion string
	offer        *registry.Release // the newest statement verified, taken or held back by its floor
	belowFloor   string            // the floor of offer when this agent is below it
	expired      bool              // the current statement's expiry has passed (frozen)
}

// SetAgentVersion names the running agent's version, for the statement floor. Unset, no floor applies.
func (v *Vocabulary) SetAgentVersion(version string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.agentVersion = version
}

// Files beside the store: the current statement's digest, and why modules were refused when it was
// installed (kept so an offline restart can still say why); the log checkpoints the node holds
// (registry/checkpoint's held file, root-only, replaced whole), and the consistency proofs the newest
// statement was verified with (kept so an offline restart verifies it again).
const (
	currentFile     = "current"
	refusedFile     = "refused"
	checkpointsFile = "checkpoints"
	proofsFile      = "log_proofs"
)

// Open loads the vocabulary the node last accepted, re-verifying it offline. A node whose cached
// statement no longer verifies starts with no words.
func Open(trustDir, modulesDir string, now func() time.Time) (*Vocabulary, error) {
	if now == nil {
		now = time.Now
	}
	st, err := cas.Open(modulesDir)
	if err != nil {
		return nil, err
	}
	v := &Vocabulary{trustDir: trustDir, store: st, now: now, words: map[string]Word{}, recipes: map[string]Recipe{}}
	ptr, err := os.ReadFile(filepath.Join(modulesDir, currentFile))
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", currentFile)
	}
	bundle, err := st.Get(strings.TrimSpace(string(ptr)))
	if err == nil {
		err = v.install(context.Background(), nil, bundle)
	}
	if err != nil {
		v.untrusted = err.Error()
	}
	if why, err := os.ReadFile(filepath.Join(modulesDir, refusedFile)); err == nil && v.untrusted != "" {
		v.untrusted = strings.TrimSpace(string(why))
	}
	return v, nil
}

// Sync fetches the plane's current statement when it differs from the node's, verifies it, fetches
// and verifies every module it pins that is not cached yet, and only then switches the vocabulary. A
// statement that does not verify leaves the vocabulary as it was; a module that does not verify is left
// out of it. Both are reported by Untrusted.
func (v *Vocabulary) Sync(ctx context.Context, f Fetcher, want channel.StatementRef) error {
	if want.Digest != "" && want.Digest == v.Ref().Digest {
		return nil
	}
	v.mu.Lock()
	held := v.offer != nil && v.belowFloor != "" && want.Digest == v.offer.Digest
	v.mu.Unlock()
	if held {
		return nil // already verified and held back by its floor: nothing new to fetch
	}
	bundle, err := f.Artifact(ctx, url.Values{"statement": {"current"}}, statement.MaxBundleSize)
	if errcode.Has(err, errcode.ReleaseNotFound) {
		return nil // the plane has published nothing yet
	}
	if err != nil {
		return err
	}
	return v.install(ctx, f, bundle)
}

// install verifies bundle, caches what it pins, and makes it current. With a nil Fetcher only cached
// modules are used (start-up, offline).
func (v *Vocabulary) install(ctx context.Context, f Fetcher, bundle []byte) error {
	trust, err := registry.OpenTrust(v.trustDir)
	if err != nil {
		return v.refuse(err)
	}
	if err := trust.HoldCheckpoints(filepath.Join(v.store.Root(), checkpointsFile)); err != nil {
		return v.refuse(err)
	}
	v.heldCheckpoints(trust)
	proofs, fetchErr := v.proofs(ctx, f, trust.ProofsNeeded(bundle))
	trust.UseProofs(proofs)
	rel, err := trust.Verify(bundle, v.now())
	if err != nil {
		if fetchErr != nil && errcode.Has(err, errcode.StatementLogInconsistent) {
			err = fmt.Errorf("%w; asking the plane for the proof: %v", err, fetchErr)
		}
		return v.refuse(err)
	}
	// The floor is judged only on a statement arriving from the plane: one this node took before (a
	// newer agent took it, then was rolled back) stays, since refusing it would leave no words at all.
	v.mu.Lock()
	below := f != nil && rel.Floor() != "" && v.agentVersion != "" && semver.Compare("v"+v.agentVersion, "v"+rel.Floor()) < 0
	if below {
		v.offer, v.belowFloor = rel, rel.Floor()
	}
	v.mu.Unlock()
	if below {
		return errcode.New(errcode.AgentNeedsNewerAgent, "statement %d's floor is %s, above this agent's %s: keeping the vocabulary this node has and updating the agent first",
			rel.Statement.Predicate.Sequence, rel.Floor(), v.agentVersion).With(errcode.DetailVersion, rel.Floor())
	}
	words, recipes := map[string]Word{}, map[string]Recipe{}
	var problems []string
	rows := slices.DeleteFunc(slices.Clone(rel.Modules()), func(row statement.Module) bool {
		return row.Kind != manifest.KindWord && row.Kind != manifest.KindRecipe
	})
	fetched := v.fetchRows(ctx, f, rows)
	for i, row := range rows {
		err := fetched[i]
		var m *manifest.Manifest
		if err == nil {
			m, err = rel.LoadManifest(v.store, row) // the module was checked by fetch
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s", row.Name, errcode.From(err, errcode.IOFailed).Code))
			continue
		}
		if row.Kind == manifest.KindRecipe {
			recipes[row.Name] = Recipe{Manifest: m, Module: row.Module, ManifestDigest: row.Manifest}
			continue
		}
		words[row.Name] = Word{Manifest: m, Module: row.Module, ManifestDigest: row.Manifest}
	}
	// current is switched before the trust state is raised. Killed in between, the node restarts on
	// the new statement, which verifies against the old state, and raises the state then. The other
	// order left a state above the statement current names: the node took its own newest statement for
	// a rollback and started with no words.
	d, err := v.store.Put(bundle)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot record the current statement")
	}
	if len(proofs) > 0 {
		data, _ := json.Marshal(proofs)
		if err := keys.ReplaceFile(filepath.Join(v.store.Root(), proofsFile), data, 0o600); err != nil {
			return v.refuse(err)
		}
	}
	ptr := filepath.Join(v.store.Root(), currentFile)
	was, readErr := os.ReadFile(ptr)
	if err := keys.ReplaceFile(ptr, []byte(d+"\n"), 0o600); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot record the current statement")
	}
	if v.afterSwitch != nil {
		v.afterSwitch()
	}
	if err := trust.Accept(rel); err != nil {
		// Put current back, so a restart runs what this process runs.
		if readErr == nil {
			_ = keys.ReplaceFile(ptr, was, 0o600)
		} else if errors.Is(readErr, fs.ErrNotExist) {
			_ = os.Remove(ptr)
		}
		return v.refuse(err)
	}
	v.heldCheckpoints(trust)
	why := ""
	if len(problems) > 0 {
		why = "modules refused: " + strings.Join(problems, ", ")
	}
	if f != nil {
		refused := filepath.Join(v.store.Root(), refusedFile)
		if why != "" {
			_ = os.WriteFile(refused, []byte(why+"\n"), 0o600)
		} else {
			_ = os.Remove(refused)
		}
	}
	v.mu.Lock()
	v.release, v.words, v.recipes, v.untrusted = rel, words, recipes, why
	v.offer, v.belowFloor, v.expired = rel, "", false
	v.mu.Unlock()
	return nil
}

// proofs gathers the consistency proofs needs names: from the plane when there is one, and those kept
// beside the current statement. None is trusted: verification checks each against two signed
// checkpoints. The error says why the plane served none, for the refusal that follows.
func (v *Vocabulary) proofs(ctx context.Context, f Fetcher, needs []checkpoint.Need) ([]checkpoint.Proof, error) {
	if len(needs) == 0 {
		return nil, nil
	}
	var out []checkpoint.Proof
	if data, err := os.ReadFile(filepath.Join(v.store.Root(), proofsFile)); err == nil {
		if kept, err := checkpoint.ParseProofs(data); err == nil {
			for _, p := range kept {
				for _, n := range needs {
					if p.Matches(n) {
						out = append(out, p)
					}
				}
			}
		}
	}
	if f == nil {
		return out, nil
	}
	var errs []error
	for _, n := range needs {
		q := url.Values{"log_proof": {n.Origin}, "old": {strconv.FormatUint(n.OldSize, 10)}, "new": {strconv.FormatUint(n.NewSize, 10)}}
		data, err := f.Artifact(ctx, q, checkpoint.MaxProofBytes)
		if err == nil {
			var p checkpoint.Proof
			if p, err = checkpoint.ParseProof(data); err == nil && p.Matches(n) {
				out = append(out, p)
				continue
			}
		}
		if err == nil {
			err = errcode.New(errcode.StatementMalformed, "the plane served a proof for other sizes than %s", n)
		}
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// heldCheckpoints records the checkpoints trust holds, for the claims.
func (v *Vocabulary) heldCheckpoints(trust *registry.Trust) {
	var cps []channel.Checkpoint
	for _, s := range trust.Checkpoints().Summaries() {
		cps = append(cps, channel.Checkpoint{Origin: s.Origin, Size: s.Size, RootHash: s.RootHash()})
	}
	v.mu.Lock()
	v.checkpoints = cps
	v.mu.Unlock()
}

// Checkpoints lists the log checkpoints the node holds, as a claim reports them.
func (v *Vocabulary) Checkpoints() []channel.Checkpoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.checkpoints)
}

// Offer is the newest statement the node verified: the current one, or a newer one held back because
// this agent is below its floor. The agent updates itself from it. nil before any.
func (v *Vocabulary) Offer() *registry.Release {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.offer != nil {
		return v.offer
	}
	return v.release
}

// BelowFloor is the floor of the held-back statement when this agent is below it; "" otherwise.
func (v *Vocabulary) BelowFloor() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.belowFloor
}

// CheckExpiry re-checks the current statement's expiry; once it has passed the vocabulary is frozen:
// Frozen refuses every job and repair and the node reports itself untrusted with statement.expired,
// until a newer statement is installed. It reports whether the vocabulary is frozen.
func (v *Vocabulary) CheckExpiry() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.release == nil || !v.release.Expired(v.now()) {
		return false
	}
	if !v.expired {
		v.expired = true
		v.untrusted = v.frozenErr().Error()
	}
	return true
}

// Frozen is statement.expired once the current statement has expired (see CheckExpiry), nil otherwise.
func (v *Vocabulary) Frozen() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.expired {
		return nil
	}
	return v.frozenErr()
}

func (v *Vocabulary) frozenErr() error {
	p := v.release.Statement.Predicate
	return errcode.New(errcode.StatementExpired, "statement %d expired at %s and no newer one has been verified: jobs and repairs are refused until a renewed statement arrives",
		p.Sequence, p.ExpiresAt.Format(time.RFC3339)).With(errcode.DetailSequence, p.Sequence)
}

// fetchRows fetches each row's manifest and module, a few at a time and each digest once (twin words
// share a module), and returns each row's error. A new node waits on these before its first claim,
// and each is a request, a hash and a synced write of megabytes: one after another, three Go words
// took 0.41 s of a new node's way to its first word.
func (v *Vocabulary) fetchRows(ctx context.Context, f Fetcher, rows []statement.Module) []error {
	seen, got := map[string]bool{}, map[string]error{}
	var mu sync.Mutex
	slots := make(chan struct{}, fetchAtOnce)
	var wg sync.WaitGroup
	for _, row := range rows {
		for _, d := range []string{row.Manifest, row.Module} {
			if seen[d] {
				continue
			}
			seen[d] = true
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				err := v.fetch(ctx, f, d)
				mu.Lock()
				got[d] = err
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	errs := make([]error, len(rows))
	for i, row := range rows {
		errs[i] = cmp.Or(got[row.Manifest], got[row.Module])
	}
	return errs
}

// fetchAtOnce bounds the fetches of one statement in flight: well inside the plane's per-node burst.
const fetchAtOnce = 4

// fetch makes sure the blob named digest is cached and intact, fetching it when a Fetcher is given.
func (v *Vocabulary) fetch(ctx context.Context, f Fetcher, digest string) error {
	if v.store.Verify(digest) == nil {
		return nil
	}
	if f == nil {
		return errcode.New(errcode.ModuleNotFound, "module %s is not cached", digest)
	}
	data, err := f.Artifact(ctx, url.Values{"sha256": {digest}}, 256<<20)
	if err != nil {
		return err
	}
	return v.store.PutAs(digest, data) // module.digest_mismatch for bytes altered anywhere on the way
}

func (v *Vocabulary) refuse(err error) error {
	v.mu.Lock()
	v.untrusted = err.Error()
	v.mu.Unlock()
	return err
}

// Ref names the statement the node runs.
func (v *Vocabulary) Ref() channel.StatementRef {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.release == nil {
		return channel.StatementRef{}
	}
	return channel.StatementRef{Sequence: v.release.Statement.Predicate.Sequence, Digest: v.release.Digest}
}

// Untrusted says why the newest statement, or some modules, were refused; "" when nothing was.
func (v *Vocabulary) Untrusted() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.untrusted
}

// Report lists the words as a claim reports them, sorted by name.
func (v *Vocabulary) Report() []channel.Word {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]channel.Word, 0, len(v.words))
	for _, w := range v.words {
		out = append(out, channel.Word{Name: w.Manifest.Name, Version: w.Manifest.Version, Digest: w.Module, Class: string(w.Manifest.Class)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Words lists the words of the vocabulary with their manifests, sorted by name.
func (v *Vocabulary) Words() []Word {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Word, 0, len(v.words))
	for _, w := range v.words {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest.Name < out[j].Manifest.Name })
	return out
}

// Word returns a word of the vocabulary.
func (v *Vocabulary) Word(name string) (Word, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, ok := v.words[name]
	return w, ok
}

// Recipes lists the recipes of the vocabulary, sorted by name.
func (v *Vocabulary) Recipes() []Recipe {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Recipe, 0, len(v.recipes))
	for _, r := range v.recipes {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest.Name < out[j].Manifest.Name })
	return out
}

// AgentDigest returns the sha256 the statement pins for the agent binary of platform ("linux-amd64").
func (v *Vocabulary) AgentDigest(platform string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.release == nil {
		return "", false
	}
	return v.release.Subject("agent/" + platform)
}

// Module returns a word's or recipe's module bytes from the cache, re-hashed against the pinned digest: the bytes
// returned are the bytes to compile.
func (v *Vocabulary) Module(w Word) ([]byte, error) {
	return v.store.Get(w.Module)
}

// HostModule returns a word's or recipe's module bytes from the cache as they are, for the word host
// only: the host hashes what it is given against the pinned digest in the process that compiles it
// (Load in process, each worker it sends the bytes to otherwise) and refuses other bytes with
// module.digest_mismatch.
// Hashing them here as well was a second sha256 of megabytes at every worker start of an idle agent.
func (v *Vocabulary) HostModule(w Word) ([]byte, error) {
	return v.store.Read(w.Module)
}
