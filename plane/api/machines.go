package api

import "time"

// Where a machine of the inventory was found.
const (
	MachineFromNode    = "node"    // a managed node
	MachineFromCloud   = "cloud"   // a server in a cloud account the plane holds that no node runs on
	MachineFromWritten = "written" // written down by hand
)

// A machine's judgement, worst first.
const (
	MachineRed   = "red"
	MachineAmber = "amber"
	MachineGrey  = "grey" // nothing known to judge it by
	MachineGreen = "green"
)

// Machine is one machine we pay for, with its judgement and the reasons for it.
type Machine struct {
	Source string `json:"source"` // node, cloud or written
	// ID is the node's id, the cloud server's account/instance, or the written machine's id.
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Addresses []string `json:"addresses,omitempty"`
	Account   string   `json:"account,omitempty"` // a cloud server's account
	// OSRelease is "ID VERSION_ID" from os-release ("debian 12"), as reported or written down.
	OSRelease string `json:"os_release,omitempty"`
	// SupportEnd is the end of the release's standard support (YYYY-MM-DD), SupportSource where it is
	// published.
	SupportEnd    string    `json:"support_end,omitempty"`
	SupportSource string    `json:"support_source,omitempty"`
	ReportedAt    time.Time `json:"reported_at,omitzero"` // a node's report the OS was read from
	Purpose       string    `json:"purpose,omitempty"`
	Owner         string    `json:"owner,omitempty"`
	RetireBy      string    `json:"retire_by,omitempty"` // YYYY-MM-DD
	ConfirmedAt   time.Time `json:"confirmed_at,omitzero"`
	ConfirmedBy   string    `json:"confirmed_by,omitempty"`
	Color         string    `json:"color"` // red, amber, grey or green
	Reasons       []string  `json:"reasons"`
}

// MachineList is the answer of GET /machines: red first, then amber, grey and green, each by name.
// Warnings say what could not be read (a cloud account that did not answer).
type MachineList struct {
	Machines []Machine `json:"machines"`
	Warnings []string  `json:"warnings"`
}

// MachineRequest writes a machine down, or rewrites one (every field is replaced); saving confirms it.
type MachineRequest struct {
	Name      string `json:"name"`
	Purpose   string `json:"purpose"`
	Owner     string `json:"owner"`
	OSRelease string `json:"os_release"`          // "debian 12", "ubuntu 22.04", "rhel 9.4"
	RetireBy  string `json:"retire_by,omitempty"` // YYYY-MM-DD
}
