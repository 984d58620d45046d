package errcode

// Codes of release statements and their bundles. Nothing changed when any of them is returned:
// verification is all or nothing, and the stored highest sequence and held keys move only after every check
// has passed.
const (
	// StatementTooLarge: a bundle, payload, manifest or trust file is over its size cap.
	StatementTooLarge = "statement.too_large"
	// StatementMalformed: a bundle, envelope, statement or predicate cannot be parsed (details.layer).
	StatementMalformed = "statement.malformed"
	// StatementSignatureInvalid: the envelope is not signed by a held statement key.
	StatementSignatureInvalid = "statement.signature_invalid"
	// StatementUnlogged: log keys are held and no valid transparency-log entry binds this envelope.
	StatementUnlogged = "statement.unlogged"
	// StatementLogInconsistent: the checkpoint the statement is logged under is not proven consistent
	// with the checkpoint of that log this verifier holds: two roots for one tree size (a fork), or no
	// valid RFC 6962 consistency proof between the two sizes (details.reason: fork, no_proof,
	// proof_invalid; details.origin, details.tree_size, details.held_size). The held checkpoint is
	// unchanged.
	StatementLogInconsistent = "statement.log_inconsistent"
	// StatementUnwitnessed: the trust folder requires cosignatures of at least k witnesses on the log
	// checkpoint and fewer of its witnesses cosigned it (details.limit is k, details.count how many did).
	StatementUnwitnessed = "statement.unwitnessed"
	// StatementRollback: the sequence is below (or reuses) the highest one accepted.
	StatementRollback = "statement.rollback"
	// StatementExpired: the predicate's expiresAt is in the past.
	StatementExpired = "statement.expired"
	// StatementSubjectDuplicate: two subjects share a name.
	StatementSubjectDuplicate = "statement.subject_duplicate"
	// StatementInvalid: the predicate is well-formed JSON but breaks a rule (details.field).
	StatementInvalid = "statement.invalid"
	// StatementFormatRetired: the statement is in the release format before this one (predicate
	// release/v1, signed Ed25519ph), which no verifier accepts any more; the release must be built and
	// signed again.
	StatementFormatRetired = "statement.format_retired"
)

var areaStatement = Area{Name: "statement", Reserved: true, Codes: []Spec{
	{StatementTooLarge, statusUnprocessable, Unchanged},
	{StatementMalformed, statusUnprocessable, Unchanged},
	{StatementSignatureInvalid, statusUnprocessable, Unchanged},
	{StatementUnlogged, statusUnprocessable, Unchanged},
	{StatementLogInconsistent, statusUnprocessable, Unchanged},
	{StatementUnwitnessed, statusUnprocessable, Unchanged},
	{StatementRollback, statusUnprocessable, Unchanged},
	{StatementExpired, statusUnprocessable, Unchanged},
	{StatementSubjectDuplicate, statusUnprocessable, Unchanged},
	{StatementInvalid, statusUnprocessable, Unchanged},
	{StatementFormatRetired, statusUnprocessable, Unchanged},
}}
