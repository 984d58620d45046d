package errcode

// Codes of releases published to the plane. Nothing changed when any of them is returned: a release
// and its artifacts are stored together or not at all. A missing artifact is module.not_found and bytes
// that do not hash to their digest are module.digest_mismatch (codes_module.go).
const (
	// ReleaseRollback: the release's sequence is not above the newest published one (details.current).
	ReleaseRollback = "release.rollback"
	// ReleaseNotFound: no release is published yet, or none has that sequence.
	ReleaseNotFound = "release.not_found"
	// ReleaseAgentMismatch: an agent binary given to lexicon-release build reports another version
	// than the release, or its version cannot be read; nodes would refuse it at rollout. Nothing was
	// written.
	ReleaseAgentMismatch = "release.agent_mismatch"
)

var areaRelease = Area{Name: "release", Reserved: true, Codes: []Spec{
	{ReleaseRollback, statusConflict, Unchanged},
	{ReleaseNotFound, statusNotFound, Unchanged},
	{ReleaseAgentMismatch, statusUnprocessable, Unchanged},
}}
