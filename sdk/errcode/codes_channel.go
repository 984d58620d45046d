package errcode

// Codes of the agent channel: the RFC 9421 signature every agent request after join carries. A
// refused request is refused whole, before any handler reads it, so none of these codes leaves anything
// changed on the plane: no nonce is recorded for a request that fails any check.
const (
	// ChannelUnsigned: the request carries neither Signature-Input nor Signature. Nothing changed.
	ChannelUnsigned = "channel.unsigned"
	// ChannelSignatureInvalid: the signature is malformed, names an unknown key id, covers other
	// components than @method, @target-uri and content-digest, uses another algorithm than ed25519, or
	// does not verify (details.reason). Nothing changed.
	ChannelSignatureInvalid = "channel.signature_invalid"
	// ChannelDigestMismatch: Content-Digest is missing, malformed, not sha-256, or does not match the
	// body received. Nothing changed.
	ChannelDigestMismatch = "channel.digest_mismatch"
	// ChannelClockSkew: the signature's created time is more than the allowed skew (5 minutes) before or
	// after the plane's clock (details.skew_seconds: the node's clock minus the plane's). Nothing changed.
	ChannelClockSkew = "channel.clock_skew"
	// ChannelReplayed: the signature's nonce was already used by this key. Nothing changed.
	ChannelReplayed = "channel.replayed"
	// ChannelBusy: the plane cannot record another nonce now (its nonce store is full); retry later.
	// Nothing changed.
	ChannelBusy = "channel.busy"
)

var areaChannel = Area{Name: "channel", Reserved: true, Codes: []Spec{
	{ChannelUnsigned, statusUnauthorized, Unchanged},
	{ChannelSignatureInvalid, statusUnauthorized, Unchanged},
	{ChannelDigestMismatch, statusBadRequest, Unchanged},
	{ChannelClockSkew, statusUnauthorized, Unchanged},
	{ChannelReplayed, statusUnauthorized, Unchanged},
	{ChannelBusy, statusUnavailable, Unchanged},
}}
