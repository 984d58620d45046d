package registry

import (
	"sort"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
)

// Diff lists what changed between two release directories.
type Diff struct {
	Old     ReleaseID        `json:"old"`
	New     ReleaseID        `json:"new"`
	Added   []DiffModule     `json:"added"`
	Removed []DiffModule     `json:"removed"`
	Changed []DiffChange     `json:"changed"`
	Broken  []manifest.Break `json:"broken"`
	// Agents lists every platform whose agent binary was added, removed or changed; From or To is ""
	// on the side that does not pin one.
	Agents []DiffAgent `json:"agents"`
}

// DiffAgent is one platform's agent binary in two releases.
type DiffAgent struct {
	Platform string `json:"platform"`
	From     string `json:"from"` // sha256, "" when the old release pins none
	To       string `json:"to"`
}

// ReleaseID names a release.
type ReleaseID struct {
	Release  string `json:"release"`
	Sequence uint64 `json:"sequence"`
}

// DiffModule is a module present in one release only.
type DiffModule struct {
	Kind    manifest.Kind `json:"kind"`
	Name    string        `json:"name"`
	Version string        `json:"version"`
}

// DiffChange is a module in both releases whose manifest or artifact changed.
type DiffChange struct {
	Kind            manifest.Kind `json:"kind"`
	Name            string        `json:"name"`
	FromVersion     string        `json:"from_version"`
	ToVersion       string        `json:"to_version"`
	ModuleChanged   bool          `json:"module_changed"`
	ManifestChanged bool          `json:"manifest_changed"`
}

// DiffReleases compares two release directories. It reads them as the publisher's own files, without
// trust; use Trust.VerifyDir to decide whether to believe either.
func DiffReleases(oldDir, newDir string) (*Diff, error) {
	oldSt, oldStore, err := readUnverified(oldDir)
	if err != nil {
		return nil, err
	}
	newSt, newStore, err := readUnverified(newDir)
	if err != nil {
		return nil, err
	}
	return DiffStatements(oldSt, newSt, oldStore.Get, newStore.Get)
}

// DiffStatements compares two release statements; oldGet and newGet return an artifact's bytes by
// digest (a word's manifest, read only when it changed, to find broken contracts). The plane diffs its
// stored releases with it, so the CLI on two folders and the UI on two published releases agree.
func DiffStatements(oldSt, newSt *statement.Statement, oldGet, newGet func(digest string) ([]byte, error)) (*Diff, error) {
	d := &Diff{
		Old:   ReleaseID{oldSt.Predicate.Release, oldSt.Predicate.Sequence},
		New:   ReleaseID{newSt.Predicate.Release, newSt.Predicate.Sequence},
		Added: []DiffModule{}, Removed: []DiffModule{}, Changed: []DiffChange{}, Broken: []manifest.Break{},
		Agents: diffAgents(AgentPins(oldSt), AgentPins(newSt)),
	}
	key := func(m statement.Module) string { return string(m.Kind) + "/" + m.Name }
	olds := map[string]statement.Module{}
	for _, m := range oldSt.Predicate.Modules {
		olds[key(m)] = m
	}
	news := map[string]statement.Module{}
	for _, m := range newSt.Predicate.Modules {
		news[key(m)] = m
		o, ok := olds[key(m)]
		if !ok {
			d.Added = append(d.Added, DiffModule{m.Kind, m.Name, m.Version})
			continue
		}
		if o.Module == m.Module && o.Manifest == m.Manifest {
			continue
		}
		d.Changed = append(d.Changed, DiffChange{m.Kind, m.Name, o.Version, m.Version, o.Module != m.Module, o.Manifest != m.Manifest})
		if m.Kind == manifest.KindWord && o.Manifest != m.Manifest {
			om, err := manifestFrom(oldGet, o.Manifest)
			if err != nil {
				return nil, err
			}
			nm, err := manifestFrom(newGet, m.Manifest)
			if err != nil {
				return nil, err
			}
			d.Broken = append(d.Broken, manifest.ContractBreaks(om, nm)...)
		}
	}
	for k, m := range olds {
		if _, ok := news[k]; !ok {
			d.Removed = append(d.Removed, DiffModule{m.Kind, m.Name, m.Version})
		}
	}
	sort.Slice(d.Removed, func(i, j int) bool { return d.Removed[i].Name < d.Removed[j].Name })
	return d, nil
}

func manifestFrom(get func(digest string) ([]byte, error), digest string) (*manifest.Manifest, error) {
	raw, err := get(digest)
	if err != nil {
		return nil, err
	}
	return manifest.Parse(raw)
}

func diffAgents(old, new []AgentPin) []DiffAgent {
	from, to := map[string]string{}, map[string]string{}
	for _, a := range old {
		from[a.Platform] = a.SHA256
	}
	for _, a := range new {
		to[a.Platform] = a.SHA256
	}
	out := []DiffAgent{}
	for _, p := range sortedKeys(mergeKeys(from, to)) {
		if from[p] != to[p] {
			out = append(out, DiffAgent{Platform: p, From: from[p], To: to[p]})
		}
	}
	return out
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
