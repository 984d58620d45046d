package errcode

// Codes a DNS driver returns (sdk/driver/dns). Unless a code says otherwise the provider refused the
// request or was not asked, and the zone did not change.
const (
	// DNSNotFound: the zone is not served by this account or server (details.zone).
	DNSNotFound = "dns.not_found"
	// DNSInvalid: a record or zone name is malformed, or the provider refused its values
	// (details.field when known).
	DNSInvalid = "dns.invalid"
	// DNSAuth: the credential (API token, TSIG key) was refused or lacks the permission for this call.
	DNSAuth = "dns.auth"
	// DNSRateLimited: the provider answered 429 and the driver's retries ran out.
	DNSRateLimited = "dns.rate_limited"
	// DNSUnsupported: the provider does not offer this record type or option.
	DNSUnsupported = "dns.unsupported"
	// DNSConflict: the change collides with what the zone holds (a CNAME beside other data, a record
	// the provider will not duplicate).
	DNSConflict = "dns.conflict"
	// DNSUnavailable: the provider or server failed or did not answer. A change may have been applied
	// in part: read the zone before retrying.
	DNSUnavailable = "dns.unavailable"
)

var areaDNS = Area{Name: "dns", Reserved: true, Codes: []Spec{
	{DNSNotFound, statusNotFound, Unchanged},
	{DNSInvalid, statusBadRequest, Unchanged},
	{DNSAuth, statusBadRequest, Unchanged},
	{DNSRateLimited, statusBadRequest, Unchanged},
	{DNSUnsupported, statusBadRequest, Unchanged},
	{DNSConflict, statusBadRequest, Unchanged},
	{DNSUnavailable, statusBadRequest, MaybeChanged},
}}
