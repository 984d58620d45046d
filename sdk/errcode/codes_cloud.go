package errcode

// Codes a cloud driver returns (sdk/driver/cloud). Unless a code says otherwise the provider refused the
// request or was not asked, and nothing changed in the account.
const (
	// CloudNotFound: no instance, region, type or image with that name or id (details.id).
	CloudNotFound = "cloud.not_found"
	// CloudInvalid: the request is malformed or the provider refused its values (details.field when
	// known).
	CloudInvalid = "cloud.invalid"
	// CloudAuth: the credential was refused or lacks the permission for this call.
	CloudAuth = "cloud.auth"
	// CloudQuota: the account's limit (instances, IPs, spend) does not allow this.
	CloudQuota = "cloud.quota"
	// CloudRateLimited: the provider answered 429 and the driver's retries ran out
	// (details.retry_after_seconds when the provider said).
	CloudRateLimited = "cloud.rate_limited"
	// CloudUnsupported: this driver or provider does not offer the feature or the option asked for.
	CloudUnsupported = "cloud.unsupported"
	// CloudConflict: the resource is in a state that does not allow this now (busy, locked, running
	// when it must be stopped, label taken).
	CloudConflict = "cloud.conflict"
	// CloudUnavailable: the provider failed (5xx or an unreadable answer), or a local provider cannot
	// run on this machine (the netns cloud without root or iproute2). The request may have been
	// applied; check before retrying a create.
	CloudUnavailable = "cloud.unavailable"

	// The plane's own refusals of a cloud call, before any destructive request reaches the driver.

	// CloudConfirmMismatch: a delete's confirmation is not the instance's label as the provider reports
	// it (details.id; details.name is the label typed). Nothing was deleted.
	CloudConfirmMismatch = "cloud.confirm_mismatch"
	// CloudSafetyCatch: automation asked for a destructive call on an account not marked test, and the
	// instance does not carry the tag the automation gave (details.id, details.tag). Nothing changed.
	CloudSafetyCatch = "cloud.safety_catch"
)

var areaCloud = Area{Name: "cloud", Reserved: true, Codes: []Spec{
	{CloudNotFound, statusNotFound, Unchanged},
	{CloudInvalid, statusBadRequest, Unchanged},
	{CloudAuth, statusBadRequest, Unchanged},
	{CloudQuota, statusBadRequest, Unchanged},
	{CloudRateLimited, statusBadRequest, Unchanged},
	{CloudUnsupported, statusBadRequest, Unchanged},
	{CloudConflict, statusBadRequest, Unchanged},
	{CloudUnavailable, statusBadRequest, MaybeChanged},
	{CloudConfirmMismatch, statusConflict, Unchanged},
	{CloudSafetyCatch, statusForbidden, Unchanged},
}}
