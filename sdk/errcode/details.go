package errcode

// Detail keys: the names of Error.Details entries, spelled once so that every package writes the same
// key for the same thing (node_id, never sometimes node) and a client can read it without knowing which
// package produced the error. Codes' documentation names them as details.<key>.
const (
	DetailAccepted          = "accepted"            // what the check accepts instead
	DetailArtifact          = "artifact"            // a release artifact's subject name
	DetailBreaks            = "breaks"              // the contract rules a release breaks
	DetailCap               = "cap"                 // a capability's name, or a request body's byte cap
	DetailCase              = "case"                // a case's id on its node
	DetailChecks            = "checks"              // how many checks ran
	DetailClass             = "class"               // a word's class
	DetailCommand           = "command"             // a process's command name
	DetailComponent         = "component"           // a path component (a symlink met on the way)
	DetailCount             = "count"               // how many were found
	DetailCurrent           = "current"             // the value now held (a release sequence)
	DetailDigest            = "digest"              // a module's sha256 digest
	DetailDriver            = "driver"              // a driver's name
	DetailDrivers           = "drivers"             // drivers' names (those that have a feature)
	DetailEntry             = "entry"               // an entry's index in a list (a key chain)
	DetailErrno             = "errno"               // the system error number
	DetailExitCode          = "exit_code"           // a process's exit status
	DetailExpiresAt         = "expires_at"          // when something expires or expired
	DetailFeature           = "feature"             // a driver feature
	DetailField             = "field"               // the field (or JSON pointer) at fault
	DetailFile              = "file"                // a file's name
	DetailFingerprint       = "fingerprint"         // a key's fingerprint
	DetailFolder            = "folder"              // a folder on a path (one others can write)
	DetailHeldSize          = "held_size"           // the tree size of the log checkpoint a verifier holds
	DetailHost              = "host"                // a host name or address
	DetailHTTPStatus        = "http_status"         // a provider's HTTP status
	DetailID                = "id"                  // the id of the thing the code is about
	DetailImport            = "import"              // a module's import
	DetailIndex             = "index"               // a position in a list
	DetailKeyID             = "key_id"              // a key's id (a node key, a publisher key)
	DetailKind              = "kind"                // a kind (of module, of driver)
	DetailLabel             = "label"               // a node label key
	DetailLayer             = "layer"               // which layer of a bundle failed to parse
	DetailLimit             = "limit"               // a count limit
	DetailLimitBytes        = "limit_bytes"         // a size limit in bytes
	DetailLimitMiB          = "limit_mib"           // a memory limit in MiB
	DetailLimitMS           = "limit_ms"            // a time limit in milliseconds
	DetailMax               = "max"                 // the cap that was reached
	DetailModule            = "module"              // a module's name
	DetailName              = "name"                // a name
	DetailNeed              = "need"                // the role a request needs
	DetailNewest            = "newest"              // the newest value held
	DetailNodeID            = "node_id"             // a node's id
	DetailOperation         = "operation"           // an operation (of the package manager)
	DetailOrigin            = "origin"              // where something comes from: a transparency log's origin, or a package version's archive (origin, label, suite)
	DetailPackage           = "package"             // a system package's name
	DetailPackages          = "packages"            // system packages' names
	DetailPart              = "part"                // a part of a larger value
	DetailPath              = "path"                // a file path
	DetailPID               = "pid"                 // a process id
	DetailPlaneKeyID        = "plane_key_id"        // the id of the plane's master key
	DetailProviderCode      = "provider_code"       // a provider's own error code
	DetailReason            = "reason"              // why, in a word (or a reserved code a word reported)
	DetailRetiredFrom       = "retired_from"        // the sequence a key was retired from
	DetailRetryAfterMS      = "retry_after_ms"      // when to retry, in milliseconds
	DetailRetryAfterSeconds = "retry_after_seconds" // when to retry, in seconds
	DetailScope             = "scope"               // which cap was reached (all, source)
	DetailSequence          = "sequence"            // a release sequence
	DetailSHA256            = "sha256"              // a digest, as sha256 hex
	DetailSkewSeconds       = "skew_seconds"        // a clock's offset in seconds
	DetailStage             = "stage"               // a rollout stage's index
	DetailState             = "state"               // the state the thing is in
	DetailStatus            = "status"              // a status (a join's, an HTTP answer's)
	DetailSubject           = "subject"             // a release statement subject
	DetailTag               = "tag"                 // an instance's tag
	DetailTreeSize          = "tree_size"           // a log checkpoint's tree size
	DetailUnit              = "unit"                // a systemd unit
	DetailVersion           = "version"             // a version
	DetailWord              = "word"                // a word's name
	DetailZone              = "zone"                // a DNS zone
)
