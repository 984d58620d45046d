package errcode

// Codes of leases: named per-node locks with a holder and an expiry. Nothing changed.
const (
	// LeaseHeld: another holder has the lease and it has not expired (details.reason names the holder,
	// details.expires_at when it runs out).
	LeaseHeld = "lease.held"
	// LeaseLost: the caller no longer holds the lease: it expired and another holder took it, or it was
	// released.
	LeaseLost = "lease.lost"
)

var areaLease = Area{Name: "lease", Reserved: true, Codes: []Spec{
	{LeaseHeld, statusConflict, Unchanged},
	{LeaseLost, statusConflict, Unchanged},
}}
