package errcode

// Codes a capability call of the lexicon_v1 host module answers with. Each call, allowed or not, is in
// the invocation's capability list. Only the capabilities of class change (fs.write, fs.remove,
// systemd.*, journal.vacuum, exec.pinned, and the footprint capabilities fs.install, account.ensure,
// nft.apply, sysctl.apply and footprint.record) change anything, and only when they answer without an
// error; with any code below nothing changed, except where capability.failed says otherwise.
const (
	// CapabilityDenied: the word asked for something its manifest does not declare, or beyond a declared
	// bound (details.cap and details.reason name what was asked). Nothing was touched.
	CapabilityDenied = "capability.denied"
	// CapabilityUnknown: this machine cannot answer the capability (no systemd in a container, a /proc
	// file missing); the host does not guess. Nothing was touched.
	CapabilityUnknown = "capability.unknown"
	// CapabilityInvalid: the request is not valid JSON, names no capability, or lacks or misuses an
	// argument (details.field). Nothing was touched.
	CapabilityInvalid = "capability.invalid"
	// CapabilityNotFound: the path, unit or program asked for does not exist. Nothing was touched.
	CapabilityNotFound = "capability.not_found"
	// CapabilityFailed: the operation was allowed and attempted but failed on the machine (permission,
	// I/O, a unit that failed to restart, a refused connection). A write is atomic and did not happen; a
	// restart or reset may have been partly carried out by systemd, as the unit's state will show.
	CapabilityFailed = "capability.failed"
	// CapabilityTimeout: the operation did not finish within its time cap (details.limit_ms).
	CapabilityTimeout = "capability.timeout"
	// CapabilityRootUnsafe: fs.write was asked beneath a declared root that someone other than root (or
	// the agent's own user) could swap for another folder: a folder from "/" down to the root's parent is
	// not owned by root or the agent's user, or is writable by group or others (sticky folders such as
	// /tmp included). details.folder names the first such folder. Nothing was touched.
	CapabilityRootUnsafe = "capability.root_unsafe"
	// CapabilityBudgetExceeded: the word made more capability calls than one invocation may
	// (details.limit). Nothing was touched by the refused call.
	CapabilityBudgetExceeded = "capability.budget_exceeded"
)

var areaCapability = Area{Name: "capability", Reserved: false, Codes: []Spec{
	{CapabilityDenied, statusBadRequest, Unchanged},
	{CapabilityUnknown, statusBadRequest, Unchanged},
	{CapabilityInvalid, statusBadRequest, Unchanged},
	{CapabilityRootUnsafe, statusBadRequest, Unchanged},
	{CapabilityNotFound, statusNotFound, Unchanged},
	{CapabilityFailed, statusBadRequest, MaybeChanged},
	{CapabilityTimeout, statusBadRequest, MaybeChanged},
	{CapabilityBudgetExceeded, statusBadRequest, Unchanged},
}}
