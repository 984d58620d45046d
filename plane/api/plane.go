package api

import "time"

// Replica is one plane process serving this plane, as it last heartbeat into the store.
type Replica struct {
	ID          string    `json:"id"`
	Version     string    `json:"version"`
	Address     string    `json:"address"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// LeaseSeconds is how long it may stay silent before it counts as missing.
	LeaseSeconds float64 `json:"lease_seconds"`
	// Missing: its lease had run out when the plane answered (plane:replica_missing is open).
	Missing bool `json:"missing"`
	// Services are the background services it runs.
	Services []string `json:"services"`
	// Memory at its last heartbeat; the peaks are kept across its restarts. MemoryLimitBytes is the
	// cgroup's or machine's limit it measures against (0: unknown); MemoryAlert the share of it above
	// which it raises plane:memory (0: never).
	HeapBytes        int64     `json:"heap_bytes"`
	RSSBytes         int64     `json:"rss_bytes"`
	PeakHeapBytes    int64     `json:"peak_heap_bytes"`
	PeakRSSBytes     int64     `json:"peak_rss_bytes"`
	PeakAt           time.Time `json:"peak_at,omitzero"`
	MemoryLimitBytes int64     `json:"memory_limit_bytes"`
	MemoryAlert      float64   `json:"memory_alert"`
}

// PlaneStatus is GET /plane/status: every replica the store knows, and which one answered.
type PlaneStatus struct {
	// Answered is the id of the replica that answered this request.
	Answered string    `json:"answered"`
	Replicas []Replica `json:"replicas"`
}
