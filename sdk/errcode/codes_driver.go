package errcode

// Codes of running a driver as a go-plugin subprocess (host/goplugin and sdk/driver). Unless a code says
// otherwise, the provider was not asked to do anything: the failure happened on Lexicon's side of the
// driver, before the call reached the provider or after the driver's process was lost.
const (
	// DriverCrashed: the driver's process died while handling this call. The call may or may not have
	// reached the provider (check before retrying a create); the host restarts the driver with backoff.
	DriverCrashed = "driver.crashed"
	// DriverDisabled: the driver was stopped (disabled) and is not running. Nothing was called.
	DriverDisabled = "driver.disabled"
	// DriverTimeout: the call did not finish within its timeout. The call may have reached the provider;
	// the driver keeps running.
	DriverTimeout = "driver.timeout"
	// DriverUnavailable: the driver is not reachable right now (starting, restarting after a crash, or
	// the connection broke). Nothing was called; retry later.
	DriverUnavailable = "driver.unavailable"
	// DriverUnconfined: no protection of the plane's files can be applied to the driver's process here
	// (the plane is not root, so no separate user, and the kernel offers no Landlock); it is started
	// only when an admin accepts that explicitly (drivers enable --unconfined). Nothing was started.
	DriverUnconfined = "driver.unconfined"
	// DriverStartFailed: the driver's process could not be started or did not complete the handshake
	// (details.digest). Nothing was called.
	DriverStartFailed = "driver.start_failed"
	// DriverVersionMismatch: the host and the driver share no API version of the contract. Nothing was
	// called.
	DriverVersionMismatch = "driver.version_mismatch"
	// DriverConfigInvalid: the account settings do not satisfy the driver's config schema
	// (details.field). The driver kept its previous configuration.
	DriverConfigInvalid = "driver.config_invalid"
	// DriverNotConfigured: a provider call came before the driver received its account settings.
	// Nothing was called.
	DriverNotConfigured = "driver.not_configured"
	// DriverNotPinned: the driver is not pinned by the current release, so it cannot be enabled.
	// Nothing changed.
	DriverNotPinned = "driver.not_pinned"
	// DriverInternal: the driver failed with an error that carries no code. Whether the provider was
	// asked is unknown; the message says what the driver reported.
	DriverInternal = "driver.internal"
)

var areaDriver = Area{Name: "driver", Reserved: true, Codes: []Spec{
	{DriverCrashed, statusBadGateway, MaybeChanged},
	{DriverDisabled, statusConflict, Unchanged},
	{DriverUnconfined, statusConflict, Unchanged},
	{DriverTimeout, statusGatewayTimeout, MaybeChanged},
	{DriverUnavailable, statusUnavailable, Unchanged},
	{DriverStartFailed, statusBadGateway, Unchanged},
	{DriverVersionMismatch, statusBadRequest, Unchanged},
	{DriverConfigInvalid, statusBadRequest, Unchanged},
	{DriverNotConfigured, statusConflict, Unchanged},
	{DriverNotPinned, statusConflict, Unchanged},
	{DriverInternal, statusBadGateway, MaybeChanged},
}}
