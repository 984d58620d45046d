package errcode

// Codes of provisioning: a machine created by a cloud driver, its agent installed by cloud-init and its
// join approved by the provider check. Returned as errors, nothing changed: a refused provisioning was
// never recorded and nothing was asked of a provider, and a refused join was not recorded.
const (
	// ProvisionNotFound: no provisioning has that id.
	ProvisionNotFound = "provision.not_found"
	// ProvisionNameTaken: an active node or a provisioning under way already has the name
	// (details.name).
	ProvisionNameTaken = "provision.name_taken"
	// ProvisionUnknownRegion: the cloud account has no such region (details.field "region"; the
	// provider was asked).
	ProvisionUnknownRegion = "provision.unknown_region"
	// ProvisionUnknownType: the region offers no such instance type (details.field "type"; the provider
	// was asked).
	ProvisionUnknownType = "provision.unknown_type"
	// ProvisionTokenInvalid: a join carried a provisioning token no provisioning minted.
	ProvisionTokenInvalid = "provision.token_invalid"
	// ProvisionTokenUsed: a join carried a provisioning token another join already used; a token joins
	// one machine once.
	ProvisionTokenUsed = "provision.token_used"
	// ProvisionTokenExpired: a join carried a provisioning token past its expiry (details.expires_at).
	ProvisionTokenExpired = "provision.token_expired"
	// ProvisionAddressMismatch: adopting an instance whose provider-reported addresses share none with
	// the node's reported addresses; nothing was linked.
	ProvisionAddressMismatch = "provision.address_mismatch"
)

var areaProvision = Area{Name: "provision", Reserved: true, Codes: []Spec{
	{ProvisionNotFound, statusNotFound, Unchanged},
	{ProvisionNameTaken, statusConflict, Unchanged},
	{ProvisionUnknownRegion, statusBadRequest, Unchanged},
	{ProvisionUnknownType, statusBadRequest, Unchanged},
	{ProvisionTokenInvalid, statusForbidden, Unchanged},
	{ProvisionTokenUsed, statusConflict, Unchanged},
	{ProvisionTokenExpired, statusForbidden, Unchanged},
	{ProvisionAddressMismatch, statusConflict, Unchanged},
}}
