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
	{StatementRollback, statusUnprocessable, Unchanged},
	{StatementExpired, statusUnprocessable, Unchanged},
	{StatementSubjectDuplicate, statusUnprocessable, Unchanged},
	{StatementInvalid, statusUnprocessable, Unchanged},
	{StatementFormatRetired, statusUnprocessable, Unchanged},
}}
