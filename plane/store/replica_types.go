package store

import (
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Replica is one plane process as it last heartbeat into the store.
type Replica struct {
	ID          string    `json:"id"`
	Version     string    `json:"version"`
	Address     string    `json:"address"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Lease is how long the replica may stay silent before it counts as missing.
	Lease time.Duration `json:"lease"`
	// Services names the background services the replica runs.
	Services []string `json:"services"`
	// Memory at the last heartbeat, the peak since the replica id first heartbeat (kept across
	// restarts), and the limit it measures against (the cgroup's or the machine's; 0 unknown).
	HeapBytes        int64     `json:"heap_bytes"`
	RSSBytes         int64     `json:"rss_bytes"`
	PeakHeapBytes    int64     `json:"peak_heap_bytes"`
	PeakRSSBytes     int64     `json:"peak_rss_bytes"`
	PeakAt           time.Time `json:"peak_at,omitzero"`
	MemoryLimitBytes int64     `json:"memory_limit_bytes"`
	// MemoryAlert is the share of the limit above which the replica raises plane:memory (0: never).
	MemoryAlert float64 `json:"memory_alert"`
	// Missing is whether HeartbeatAt+Lease had passed when the replica was read.
	Missing bool `json:"missing"`
}

// RouteCount is what one replica served on one route pattern in one minute.
type RouteCount struct {
	Route    string    // the router's pattern with its method: "GET /api/v1/admin/nodes/{ref}"
	Minute   time.Time // the minute's start
	Requests int64
	Failures int64         // answers with a 5xx status
	Codes    map[int]int64 // the 5xx statuses seen, with their counts
}

type ReplicaHeartbeatParams struct {
	ID, Version, Address string
	StartedAt            time.Time
	Lease                time.Duration // 0: DefaultReplicaLease
	Services             []string
	HeapBytes, RSSBytes  int64
	MemoryLimitBytes     int64
	MemoryAlert          float64 // a share in [0, 1]; 0: never alert
	// Routes replace the counts held for their (route, minute) of this replica: the replica sends
	// its running totals, so a heartbeat sent twice changes nothing.
	Routes []RouteCount
	Now    time.Time
}

type ReplicaListParams struct {
	Now time.Time // for Missing
}

type ReplicaForgetParams struct {
	ID  string
	By  string // who forgot it (an admin token's name), noted on its open plane:replica_missing incident
	Now time.Time
}

// DefaultReplicaLease is how long a replica may be silent before it is missing.
const DefaultReplicaLease = time.Minute

// MaxRoutesPerHeartbeat bounds the route counts one heartbeat carries.
const MaxRoutesPerHeartbeat = 2000

// HealthThresholds are the settings of the plane's own detectors. Zero fields mean the defaults.
type HealthThresholds struct {
	// DriverWindow is how far back driver calls are read (15 minutes). A driver is failing when, in
	// the window, it was restarted more than DriverRestarts times (2) or its last DriverFailures calls
	// (5) all failed for the driver's own sake (timed out, crashed, unavailable, failed to start), and
	// no call succeeded after them.
	DriverWindow   time.Duration
	DriverRestarts int
	DriverFailures int
	// RouteWindow is how far back route counts are summed (5 minutes). A route is failing when it
	// served at least RouteMinRequests (20) in the window and more than RouteFailShare (0.5) of
	// them answered 5xx.
	RouteWindow      time.Duration
	RouteMinRequests int
	RouteFailShare   float64
}

// DriverFailureCodes are the outcomes of a driver call that say the driver itself is failing, rather
// than the provider or the request: the detector of plane:driver_failing counts only these.
var DriverFailureCodes = []string{errcode.DriverTimeout, errcode.DriverCrashed, errcode.DriverUnavailable, errcode.DriverStartFailed}
