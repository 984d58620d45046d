package channel

import (
	"slices"
	"strconv"
	"time"
)

// HostFacts is what a node says of its machine on its claims, read by the agent itself (os-release,
// /proc, uname, statfs) and refreshed at most every FactsEvery, so that a claim's report digest stays
// the same between refreshes. The JSON names are the fact keys a filter or selector names
// (fact.os=debian-12): one spelling on the wire, in the store and in the filters.
//
// Every text field is at most MaxFactText bytes and a node reports at most MaxFactAddresses
// addresses; the plane cuts what is over (plane/internal/nodetext) rather than refusing the claim.
type HostFacts struct {
	CollectedAt time.Time `json:"collected_at"`
	// OS is os-release's ID and VERSION_ID joined by a dash (debian-12), the form people filter by;
	// OSName is its PRETTY_NAME.
	OS       string `json:"os,omitempty"`
	OSName   string `json:"os_name,omitempty"`
	Kernel   string `json:"kernel,omitempty"` // uname's release
	Arch     string `json:"arch,omitempty"`   // uname's machine
	Hostname string `json:"hostname,omitempty"`
	CPUs     int    `json:"cpus,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	// Memory and the root filesystem, in bytes. The free amounts are rounded down (FactsMemoryStep,
	// FactsDiskStep) so that a busy machine's report does not change on every refresh.
	MemoryBytes     int64 `json:"memory_bytes,omitempty"`
	MemoryFreeBytes int64 `json:"memory_free_bytes,omitempty"`
	DiskBytes       int64 `json:"disk_bytes,omitempty"`
	DiskFreeBytes   int64 `json:"disk_free_bytes,omitempty"`
	// BootedAt rather than an uptime: it does not change between reports; the uptime is now minus it.
	BootedAt  time.Time `json:"booted_at,omitzero"`
	Addresses []string  `json:"addresses,omitempty"`
}

// Fact caps and the refresh period.
const (
	MaxFactText      = 255
	MaxFactAddresses = 32
	FactsEvery       = 5 * time.Minute
	FactsMemoryStep  = 64 << 20 // 64 MiB
	FactsDiskStep    = 1 << 30  // 1 GiB
)

// FactKeys are the facts a filter may name, each with the text Fact answers for it.
var FactKeys = []string{"os", "os_name", "kernel", "arch", "hostname", "cpus", "cpu_model", "address"}

// Fact answers a fact by its key as text, and whether the key is one of FactKeys. address is
// answered by Has instead: a node has several.
func (f HostFacts) Fact(key string) (string, bool) {
	switch key {
	case "os":
		return f.OS, true
	case "os_name":
		return f.OSName, true
	case "kernel":
		return f.Kernel, true
	case "arch":
		return f.Arch, true
	case "hostname":
		return f.Hostname, true
	case "cpus":
		if f.CPUs == 0 {
			return "", true
		}
		return strconv.Itoa(f.CPUs), true
	case "cpu_model":
		return f.CPUModel, true
	}
	return "", false
}

// Has reports whether the fact key has the value: for address, whether any address is it.
func (f HostFacts) Has(key, value string) bool {
	if key == "address" {
		return slices.Contains(f.Addresses, value)
	}
	v, ok := f.Fact(key)
	return ok && v == value
}
