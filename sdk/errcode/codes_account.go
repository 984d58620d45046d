package errcode

// Codes of driver accounts on the plane (an account is a driver, its settings and a credential the plane
// keeps sealed under its master key). Nothing changed when any of them is returned, and no driver was
// called.
const (
	// AccountNotFound: no account has that name.
	AccountNotFound = "account.not_found"
	// AccountExists: an account with that name is already stored; remove it first to replace it.
	AccountExists = "account.exists"
	// AccountWrongKind: the account's driver serves another contract than the operation needs (a DNS
	// operation on a cloud account, or the reverse); details.kind is the account's.
	AccountWrongKind = "account.wrong_kind"
	// AccountKeyMismatch: the account's credential was sealed under another master key than the one
	// this plane holds (details.key_id, details.plane_key_id): every replica needs the same key file.
	AccountKeyMismatch = "account.key_mismatch"
	// AccountSealBroken: the sealed credential does not open under the plane's key although the key is
	// the one that sealed it: the stored bytes were altered. Add the account again.
	AccountSealBroken = "account.seal_broken"
)

var areaAccount = Area{Name: "account", Reserved: true, Codes: []Spec{
	{AccountNotFound, statusNotFound, Unchanged},
	{AccountExists, statusConflict, Unchanged},
	{AccountWrongKind, statusBadRequest, Unchanged},
	{AccountKeyMismatch, statusInternal, Unchanged},
	{AccountSealBroken, statusInternal, Unchanged},
}}
