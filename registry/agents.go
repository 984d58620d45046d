package registry

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// AgentSubjectPrefix starts the subject name of an agent binary: "agent/<os>-<arch>".
const AgentSubjectPrefix = "agent/"

// AgentPin is one agent binary a statement pins. The agent it names carries the statement's release
// version: `make release` stamps both from the one VERSION file, and a node probing a staged binary
// refuses one that reports another version.
type AgentPin struct {
	Platform string `json:"platform"` // linux-amd64
	SHA256   string `json:"sha256"`
}

// AgentPins lists the agent binaries st pins, sorted by platform.
func AgentPins(st *statement.Statement) []AgentPin {
	out := []AgentPin{}
	for _, s := range st.Subject {
		if p, ok := strings.CutPrefix(s.Name, AgentSubjectPrefix); ok {
			out = append(out, AgentPin{Platform: p, SHA256: s.SHA256()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Platform < out[j].Platform })
	return out
}

// Agents lists the agent binaries the release pins.
func (r *Release) Agents() []AgentPin { return AgentPins(r.Statement) }

// Floor is the lowest agent version that may use this release's vocabulary; "" for any.
func (r *Release) Floor() string { return r.Statement.Predicate.Floor }

// Expired reports whether the release's validity has ended at now.
func (r *Release) Expired(now time.Time) bool { return !now.Before(r.Statement.Predicate.ExpiresAt) }

// RenewOptions describe a renewal: the previous release again, with a new sequence and expiry.
type RenewOptions struct {
	Key         keys.PublisherPrivate
	PreviousDir string
	Sequence    uint64
	Expires     time.Duration
	OutDir      string
	Now         time.Time
}

// Renew writes a release with exactly the previous release's subjects, module table, floor and key
// chain, under a new sequence, issue time and expiry. Nothing is rebuilt: a fleet frozen by an expired
// statement is thawed without touching the bytes it runs, and nodes download nothing new.
func Renew(o RenewOptions) (*BuildResult, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Expires == 0 {
		o.Expires = DefaultExpiry
	}
	if _, err := os.Stat(filepath.Join(o.OutDir, BundleFile)); err == nil {
		return nil, errcode.New(errcode.UsageInvalid, "%s already holds a release; a signed release is never overwritten", o.OutDir)
	}
	prev, prevStore, err := readUnverified(o.PreviousDir)
	if err != nil {
		return nil, err
	}
	if o.Sequence <= prev.Predicate.Sequence {
		return nil, errcode.New(errcode.StatementRollback, "sequence %d must be above the previous release's %d", o.Sequence, prev.Predicate.Sequence)
	}
	st := *prev
	st.Predicate.Sequence = o.Sequence
	st.Predicate.IssuedAt = o.Now.UTC().Truncate(time.Second)
	st.Predicate.ExpiresAt = st.Predicate.IssuedAt.Add(o.Expires)
	st.Predicate.Publisher = o.Key.Public()
	payload, err := statement.Encode(&st)
	if err != nil {
		return nil, err
	}
	if _, err := statement.Decode(payload); err != nil {
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
	seen := map[string]bool{}
	res := &BuildResult{Release: st.Predicate.Release, Sequence: o.Sequence, Publisher: o.Key.Public().Fingerprint(), OutDir: o.OutDir}
	for _, s := range st.Subject {
		if seen[s.SHA256()] {
			continue
		}
		seen[s.SHA256()] = true
		data, err := prevStore.Get(s.SHA256()) // re-hashed: a damaged previous folder is not copied on
		if err != nil {
			return nil, err
		}
		if err := store.PutAs(s.SHA256(), data); err != nil {
			return nil, err
		}
	}
	for _, m := range st.Predicate.Modules {
		res.Modules = append(res.Modules, ModuleSummary{Name: m.Name, Kind: string(m.Kind), Version: m.Version, Class: string(m.Class), SHA256: m.Module})
	}
	if err := keys.ReplaceFile(filepath.Join(o.OutDir, BundleFile), bundleJSON, 0o644); err != nil {
		return nil, err
	}
	res.Statement = cas.Sum(payload)
	res.ExpiresAt = st.Predicate.ExpiresAt
	res.Subjects = len(st.Subject)
	return res, nil
}
