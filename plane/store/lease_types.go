package store

import "time"

// Lease is a named lock on a subject (a node's id for the per-node leases, a rollout's id for the one
// that says which replica advances it), held by one holder until it expires.
type Lease struct {
	Subject    string    `json:"subject"`
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	Purpose    string    `json:"purpose"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// LeaseChange is the per-node lease every change takes (a rollout's step, provisioning, an exclusive
// job), so that two changes never run on one machine at once.
const LeaseChange = "change"

// MaxLeaseTTL bounds a lease: nothing waits for ever on a holder that died.
const MaxLeaseTTL = 24 * time.Hour

type LeaseAcquireParams struct {
	Subject string
	Name    string
	Holder  string // who holds it: a replica, a job
	Purpose string // what for, shown to people
	TTL     time.Duration
	Now     time.Time
	// From, when set, hands the lease over: it is granted too if From holds it now (an exclusive job
	// takes over the lease its request took before the job had an id).
	From string
}

type LeaseRenewParams struct {
	Subject, Name, Holder string
	TTL                   time.Duration
	Now                   time.Time
}

type LeaseReleaseParams struct {
	Subject, Name, Holder string
}

type LeaseListParams struct {
	Subject string // "" for every subject
	Now     time.Time
	// Live leaves out leases past their expiry.
	Live bool
}
