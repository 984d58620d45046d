package errcode

// Codes of the agent channel's artifact route.
const (
	// ArtifactNotPinned: the current release pins no agent binary for the platform asked for
	// (details.platform); the plane serves an agent only as a pinned artifact. Nothing changed.
	ArtifactNotPinned = "artifact.not_pinned"
)

var areaArtifact = Area{Name: "artifact", Reserved: true, Codes: []Spec{
	{ArtifactNotPinned, statusNotFound, Unchanged},
}}
