package errcode

// Codes of the trust core: manifests, the content-addressed store, release statements and keys.
// Unless a code says otherwise, nothing changed when it was returned: verification is all or nothing,
// and the stored highest sequence and held keys move only after every check has passed.
const (
	// ManifestMalformed: the manifest is not a single JSON object (one over its size cap is
	// statement.too_large).
	ManifestMalformed = "manifest.malformed"
	// ManifestUnknownField: the manifest names a field the schema does not know.
	ManifestUnknownField = "manifest.unknown_field"
	// ManifestInvalid: a field has a value the schema refuses (details.field names it).
	ManifestInvalid = "manifest.invalid"
	// ManifestSchemaInvalid: params or output is not valid JSON Schema 2020-12.
	ManifestSchemaInvalid = "manifest.schema_invalid"
	// ManifestParamsOpen: the params schema does not set additionalProperties to false.
	ManifestParamsOpen = "manifest.params_open"

	// ModuleDigestMismatch: bytes do not hash to the digest that names or pins them.
	ModuleDigestMismatch = "module.digest_mismatch"
	// ModuleNotPinned: an artifact or module the verified statement does not list.
	ModuleNotPinned = "module.not_pinned"
	// ModuleNotFound: the store holds no blob with that digest.
	ModuleNotFound = "module.not_found"

	// StatementTooLarge: a bundle, payload, manifest or trust file is over its size cap.
	StatementTooLarge = "statement.too_large"
	// StatementMalformed: a bundle, envelope, statement or predicate cannot be parsed (details.layer).
	StatementMalformed = "statement.malformed"
	// StatementSignatureInvalid: the envelope is not signed by a held statement key.
	StatementSignatureInvalid = "statement.signature_invalid"
	// StatementUnlogged: log keys are held and no valid transparency-log entry binds this envelope.
	StatementUnlogged = "statement.unlogged"
	// StatementRollback: the sequence is below (or reuses) the highest one accepted.
	StatementRollback = "statement.rollback"
	// StatementExpired: expires_at is in the past.
	StatementExpired = "statement.expired"
	// StatementSubjectDuplicate: two subjects share a name.
	StatementSubjectDuplicate = "statement.subject_duplicate"
	// StatementInvalid: the predicate is well-formed JSON but breaks a rule (details.field).
	StatementInvalid = "statement.invalid"

	// KeyRetired: the statement is signed by a key retired at or before its sequence.
	KeyRetired = "key.retired"
	// KeyChainInvalid: a key-chain link or retirement is not signed by a held, unretired key.
	KeyChainInvalid = "key.chain_invalid"
	// KeyFileUntrusted: a key, policy or state file (or its folder) is not the running user's,
	// or group or others can write it.
	KeyFileUntrusted = "key.file_untrusted"
	// KeyMalformed: a key's text form or file cannot be parsed.
	KeyMalformed = "key.malformed"

	// ContractBroken: a word in the previous release lost or changed a param, or lost or redefined an
	// output field (details.word, details.field). The release was not written.
	ContractBroken = "contract.broken"

	// LogUnavailable: the transparency log refused or could not be reached. The bundle on disk is
	// unchanged.
	LogUnavailable = "log.unavailable"
	// UsageInvalid: a command was called with missing or contradictory flags.
	UsageInvalid = "usage.invalid"
	// IOFailed: a local file could not be read or written.
	IOFailed = "io.failed"
)
