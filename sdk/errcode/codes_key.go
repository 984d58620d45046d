package errcode

// Codes of keys and the files that hold them. Nothing changed when any of them is returned: the held keys
// move only after every check has passed.
const (
	// KeyRetired: the statement is signed by a key retired at or before its sequence.
	KeyRetired = "key.retired"
	// KeyChainInvalid: a key-chain link or retirement is not signed by a held, unretired key.
	KeyChainInvalid = "key.chain_invalid"
	// KeyFileUntrusted: a key, policy or state file (or its folder) is not the running user's,
	// or group or others can write it.
	KeyFileUntrusted = "key.file_untrusted"
	// KeyMalformed: a key's text form or file cannot be parsed.
	KeyMalformed = "key.malformed"
	// KeyAlgorithmRetired: a publisher key is Ed25519, which publisher keys were before they became
	// ECDSA P-256; a new key must be made and handed to the nodes.
	KeyAlgorithmRetired = "key.algorithm_retired"
)

var areaKey = Area{Name: "key", Reserved: true, Codes: []Spec{
	{KeyRetired, statusUnprocessable, Unchanged},
	{KeyChainInvalid, statusUnprocessable, Unchanged},
	{KeyFileUntrusted, statusUnprocessable, Unchanged},
	{KeyMalformed, statusUnprocessable, Unchanged},
	{KeyAlgorithmRetired, statusUnprocessable, Unchanged},
}}
