package api

import "time"

// ProvisionRequest is the body of POST /provisionings: make a machine named Name in Account (a cloud
// account) from Region, Type and Image, install its agent for Platform (default linux-amd64) with
// cloud-init and join it; with DNSAccount and Zone, add its A/AAAA records. Refused before anything is
// created: account.not_found, provision.unknown_region, provision.unknown_type, provision.name_taken,
// cloud.invalid (a label, image or tag no provider takes), store.param_invalid (labels).
type ProvisionRequest struct {
	Name       string            `json:"name"`
	Account    string            `json:"account"`
	Region     string            `json:"region"`
	Type       string            `json:"type"`
	Image      string            `json:"image"`
	Platform   string            `json:"platform,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	DNSAccount string            `json:"dns_account,omitempty"`
	Zone       string            `json:"zone,omitempty"`
}

// Provisioning states.
const (
	ProvCreating   = "creating"
	ProvBooting    = "booting"
	ProvInstalling = "installing"
	ProvJoining    = "joining"
	ProvJoined     = "joined"
	ProvFailed     = "failed"
	ProvCleanedUp  = "cleaned_up"
)

// Provisioning is one machine made through a cloud account (GET /provisionings/{id} has Events).
// Reason says why it failed, or why its join waits for a person; Cleanup is "deleted" once the
// instance a failed provisioning made is gone, "failed" while deleting it fails (an incident is open).
type Provisioning struct {
	ID             string              `json:"id"`
	Name           string              `json:"name"`
	Account        string              `json:"account"`
	Region         string              `json:"region"`
	Type           string              `json:"type"`
	Image          string              `json:"image"`
	Platform       string              `json:"platform"`
	Labels         map[string]string   `json:"labels,omitempty"`
	DNSAccount     string              `json:"dns_account,omitempty"`
	Zone           string              `json:"zone,omitempty"`
	Tag            string              `json:"tag,omitempty"`
	State          string              `json:"state"`
	StateAt        time.Time           `json:"state_at"`
	InstanceID     string              `json:"instance_id,omitempty"`
	Addresses      []string            `json:"addresses,omitempty"`
	TokenExpiresAt time.Time           `json:"token_expires_at,omitzero"`
	TokenUsedAt    time.Time           `json:"token_used_at,omitzero"`
	JoinID         string              `json:"join_id,omitempty"`
	NodeID         string              `json:"node_id,omitempty"`
	Reason         string              `json:"reason,omitempty"`
	Cleanup        string              `json:"cleanup,omitempty"`
	CreatedBy      string              `json:"created_by"`
	CreatedAt      time.Time           `json:"created_at"`
	FinishedAt     time.Time           `json:"finished_at,omitzero"`
	Events         []ProvisioningEvent `json:"events,omitempty"`
}

// Final reports whether the provisioning will not move again (joined, cleaned up, or failed with
// nothing left to delete).
func (p Provisioning) Final() bool {
	switch p.State {
	case ProvJoined, ProvCleanedUp:
		return true
	case ProvFailed:
		return p.Cleanup != "failed" && (p.InstanceID == "" || p.Cleanup == "deleted")
	}
	return false
}

// ProvisioningEvent is one entry of a provisioning's timeline.
type ProvisioningEvent struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	State  string    `json:"state"`
	Detail string    `json:"detail"`
}

// ProvisioningList is the answer of GET /provisionings (newest first).
type ProvisioningList struct {
	Provisionings []Provisioning `json:"provisionings"`
}

// AdoptRequest is the body of POST /nodes/{id}/adopt: the node is the instance InstanceID of Account
// if the provider reports, for that instance, an address the node reported (provision.address_mismatch
// otherwise).
type AdoptRequest struct {
	Account    string `json:"account"`
	InstanceID string `json:"instance_id"`
}

// DecommissionRequest is the body of POST /nodes/{id}/decommission: Confirm is the node's name typed
// back. The plane removes the A/AAAA records its provisioning added (those only), deletes the instance
// it made (only one carrying the provisioning's tag) and disconnects the node; the provisioning ends
// cleaned_up. provision.not_found when the plane did not provision the node; usage.invalid for an
// adopted one (its instance is deleted by hand) or a wrong Confirm.
type DecommissionRequest struct {
	Confirm string `json:"confirm"`
}

// Decommissioned is the answer of POST /nodes/{id}/decommission.
type Decommissioned struct {
	Provisioning Provisioning `json:"provisioning"`
	Node         Node         `json:"node"`
	Cancelled    []Job        `json:"cancelled"`
	Lost         []Job        `json:"lost"`
}

// InstallCommandRequest asks for a command that enrols a machine that already exists. Labels are
// set on the node when its join is approved at once; ExpiresIn ("1h", at most a week; default an hour)
// bounds when the command's one-time token may be used; Approve false leaves the join for a person
// (default true: the token vouches for the machine, as a provisioning's does); Platform is the agent's
// os-arch (default linux-amd64).
type InstallCommandRequest struct {
	Labels    map[string]string `json:"labels,omitempty"`
	ExpiresIn string            `json:"expires_in,omitempty"`
	Approve   *bool             `json:"approve,omitempty"`
	Platform  string            `json:"platform,omitempty"`
}

// InstallCommand is one shell command to paste, as root, on the machine: it writes the trust folder,
// the policy and the plane's CA, fetches the agent the fleet's release pins (checking its sha256
// against the signed pin), installs it and joins with a one-time token. The command holds the token:
// it is shown in this answer only.
type InstallCommand struct {
	// ID is the enrolment's: the join it makes is approved by "enrolment:<id>".
	ID        string    `json:"id"`
	Command   string    `json:"command"`
	Approve   bool      `json:"approve"`
	ExpiresAt time.Time `json:"expires_at"`
	// AgentDigest is the sha256 of the agent binary the command installs, from the release's pin.
	AgentDigest string `json:"agent_digest"`
}
