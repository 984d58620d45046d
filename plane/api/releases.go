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
	// Rollout is the rollout POST /releases?deploy_all=true started to take every node to it.
	Rollout string `json:"rollout,omitempty"`
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
