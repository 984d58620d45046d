package store

import (
	"regexp"
	"time"
)

// DriverState is whether an admin enabled a driver. Name is the driver's class and name as the
// release's subject spells it ("dns-rfc2136", "cloud-linode").
type DriverState struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Digest is the executable the current release pinned when the driver was last enabled. What runs is
	// always what the current release pins; this says what the admin saw.
	Digest    string    `json:"digest,omitempty"`
	ChangedAt time.Time `json:"changed_at,omitzero"`
	ChangedBy string    `json:"changed_by,omitempty"`
	// Unconfined is the admin's consent, given when the driver was last enabled, to run it where no
	// protection of the plane's files can be applied (goplugin.Options.Unconfined).
	Unconfined bool `json:"unconfined,omitempty"`
}

type DriverSetParams struct {
	Name   string
	Digest string // DriverEnable: lowercase hex sha256; DriverDisable: ignored
	// Unconfined records the consent to run the driver unconfined (DriverEnable; DriverDisable keeps
	// the one last given).
	Unconfined bool
	By         string
	Now        time.Time
}

type DriverGetParams struct {
	Name string
}

// driverNameRE is a driver's name on the plane: <class>-<name>, the form host/goplugin takes.
var driverNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidDriverName reports whether name can name a driver.
func ValidDriverName(name string) bool { return driverNameRE.MatchString(name) }
