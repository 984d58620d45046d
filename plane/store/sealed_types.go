package store

// SealedKind names a table whose rows hold a value sealed under the plane's master key.
type SealedKind string

// The sealed values: driver accounts' credentials and backup targets' secrets (whose rows record the
// key id), and single sign-on sessions' refresh tokens (whose rows do not: the key ring tries its keys).
const (
	SealedAccount      SealedKind = "account"
	SealedBackupTarget SealedKind = "backup_target"
	SealedSSOSession   SealedKind = "sso_session"
)

// SealedKinds lists every kind, in the order a key rotation walks them.
var SealedKinds = []SealedKind{SealedAccount, SealedBackupTarget, SealedSSOSession}

// MaxSealedPage is the most rows one SealedValueList returns.
const MaxSealedPage = 1000

// SealedValue is one sealed value and what binds it: Ref is the row's key (an account's id, a
// target's name, a session's id hash); Name and Driver are the account's (Name is the target's name;
// both empty for a session). KeyID is empty where the row does not record it.
type SealedValue struct {
	Kind         SealedKind
	Ref          string
	Name, Driver string
	Sealed       []byte
	KeyID        string
}

type SealedValueListParams struct {
	Kind  SealedKind
	After string // the Ref to start after; "" from the first
	Limit int    // 1 to MaxSealedPage
}

// SealedValueResealParams replaces a sealed value only if the row still holds Old (compare-and-set):
// a value another replica wrote meanwhile is not overwritten with a stale one.
type SealedValueResealParams struct {
	Kind     SealedKind
	Ref      string
	Old, New []byte
	KeyID    string // recorded where the row has a key id; ignored for sessions
}
