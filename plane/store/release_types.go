package store

import "time"

// MaxArtifactSize bounds one artifact; agent binaries are the largest.
const MaxArtifactSize = 256 << 20

// Release is a published release statement.
type Release struct {
	Sequence        int64         `json:"sequence"`
	Version         string        `json:"version"`          // the release's semver
	StatementDigest string        `json:"statement_digest"` // lowercase hex sha256
	Bundle          []byte        `json:"bundle,omitempty"` // the Sigstore bundle as published
	PublishedAt     time.Time     `json:"published_at"`
	PublishedBy     string        `json:"published_by,omitempty"`
	Artifacts       []ArtifactRef `json:"artifacts"`
}

// ArtifactRef names an artifact of a release: name is the statement subject's name
// (word/disk_usage@1.0.0.wasm, agent/linux-amd64).
type ArtifactRef struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Artifact is an artifact's bytes.
type Artifact struct {
	Digest string
	Size   int64
	Data   []byte
}

type ReleasePutParams struct {
	Sequence        int64
	Version         string
	StatementDigest string
	Bundle          []byte
	Artifacts       []ArtifactPut
	By              string
	Now             time.Time
	// ExpiresAt is when the release's statement expires (its predicate's expiresAt); the
	// plane:release_expiring detector reads it. Zero records none.
	ExpiresAt time.Time
}

// ArtifactPut is one artifact to store with a release.
type ArtifactPut struct {
	Name   string
	Digest string // lowercase hex sha256 of Data
	Data   []byte
}

type ReleaseGetParams struct {
	Sequence int64
}

type ReleaseListParams struct {
	Limit int // 0: 100
	// BeforeSequence pages: only releases older than this sequence; 0 starts at the newest. Pass the
	// last sequence of one page to get the next.
	BeforeSequence int64
}

type ArtifactGetParams struct {
	Digest string // lowercase hex sha256
}
