package api

import "time"

// The body of POST /releases is a tar stream of a release folder: ReleaseBundleFile (the Sigstore
// bundle of the release statement) and each artifact as sha256/<lowercase hex> regular files, nothing
// else, at most MaxReleaseUpload bytes. The plane verifies it with its own trust folder, as a node
// would, before it stores anything.
const (
	ReleaseBundleFile = "statement.bundle.json" // registry.BundleFile, which a client need not link
	MaxReleaseUpload  = 1 << 30
)

// Release is a published release: its statement and the artifacts it pins.
type Release struct {
	Sequence        int64         `json:"sequence"`
	Version         string        `json:"version"`          // the release's semver
	StatementDigest string        `json:"statement_digest"` // lowercase hex sha256
	PublishedAt     time.Time     `json:"published_at"`
	PublishedBy     string        `json:"published_by,omitempty"`
	Artifacts       []ArtifactRef `json:"artifacts"`
	// ExpiresAt is when the release's signed statement expires: a node holding it then freezes its
	// vocabulary until a newer one arrives. Zero when the plane could not read it.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Rollout is the rollout POST /releases?deploy_all=true started to take every node to it.
	Rollout string `json:"rollout,omitempty"`
	// Checks are the verification's verdicts, on POST /releases's answer only.
	Checks []Check `json:"checks,omitempty"`
}

// ArtifactRef is one artifact a release pins.
type ArtifactRef struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// ReleaseList is the answer of GET /releases, newest first.
type ReleaseList struct {
	Releases []Release `json:"releases"`
}

// ReleaseDetail is the answer of GET /releases/{sequence}: the release and what its statement pins,
// read from the bundle the plane verified when it was published.
type ReleaseDetail struct {
	Release
	Modules []ReleaseModule `json:"modules"` // words, recipes and drivers, in the statement's order
	Agents  []ReleaseAgent  `json:"agents"`  // agent binaries by platform
}

// ReleaseModule is one row of a release's module table.
type ReleaseModule struct {
	Kind     string `json:"kind"` // word, recipe, driver
	Name     string `json:"name"`
	Version  string `json:"version"`
	Class    string `json:"class,omitempty"` // a word's class
	Module   string `json:"module"`          // the module's sha256
	Manifest string `json:"manifest"`        // its signed manifest's sha256
}

// ReleaseAgent is an agent binary a release pins.
type ReleaseAgent struct {
	Platform string `json:"platform"` // linux-amd64
	SHA256   string `json:"sha256"`
}

// ReleaseDiff is the answer of GET /releases/{sequence}/diff/{to}: what changed from one published
// release to another, as lexicon-release diff reports it for two release folders.
type ReleaseDiff struct {
	From    Release         `json:"from"`
	To      Release         `json:"to"`
	Added   []ReleaseModule `json:"added"`   // kind, name and version only
	Removed []ReleaseModule `json:"removed"` // kind, name and version only
	Changed []ModuleChange  `json:"changed"`
	Broken  []ContractBreak `json:"broken"` // word contracts the change breaks
	Agents  []AgentChange   `json:"agents"`
}

// ModuleChange is a module in both releases whose module or manifest changed.
type ModuleChange struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	FromVersion     string `json:"from_version"`
	ToVersion       string `json:"to_version"`
	ModuleChanged   bool   `json:"module_changed"`
	ManifestChanged bool   `json:"manifest_changed"`
}

// ContractBreak is one rule of a word's contract a change breaks.
type ContractBreak struct {
	Word   string `json:"word"`
	Field  string `json:"field"`
	Change string `json:"change"` // removed, added, changed
}

// AgentChange is one platform's agent binary in two releases; From or To is "" on the side that pins
// none.
type AgentChange struct {
	Platform string `json:"platform"`
	From     string `json:"from"`
	To       string `json:"to"`
}

// Check is one verdict of the plane's verification of an upload, in the order they ran. A refused
// upload carries them in its error's details.checks; a published one in Release.Checks.
type Check struct {
	Check   string `json:"check"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}
