package errcode

// Codes of rebuilding a release's modules from their source tree, to check that the signed bytes are
// what that source builds to (lexicon-release rebuild-check). Each names one module in details.module.
const (
	// RebuildMismatch: the module built from source hashes differently from the one the release pins
	// (details.want, details.got): the release was not built from this tree, with this toolchain, or was
	// altered.
	RebuildMismatch = "rebuild.mismatch"
	// RebuildFailed: the module's source folder exists but does not build.
	RebuildFailed = "rebuild.failed"
	// RebuildNoSource: no source folder in the tree holds the module (map it with --map name=dir).
	RebuildNoSource = "rebuild.no_source"
)

var areaRebuild = Area{Name: "rebuild", Reserved: true, Codes: []Spec{
	{RebuildMismatch, statusUnprocessable, Unchanged},
	{RebuildFailed, statusUnprocessable, Unchanged},
	{RebuildNoSource, statusNotFound, Unchanged},
}}
