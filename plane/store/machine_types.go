package store

import (
	"encoding/json"
	"time"
)

// Machine is a machine written down by hand in the inventory: one the plane cannot see as a node or a
// cloud server, or one whose purpose and owner somebody keeps. Saving it confirms it.
type Machine struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Purpose   string `json:"purpose"`
	Owner     string `json:"owner"`
	OSRelease string `json:"os_release"` // "debian 12": os-release's ID and VERSION_ID
	// RetireBy is the day it should be gone (UTC midnight); zero when none was set.
	RetireBy    time.Time `json:"retire_by,omitzero"`
	ConfirmedAt time.Time `json:"confirmed_at"`
	ConfirmedBy string    `json:"confirmed_by"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
}

// MachinePutParams adds a machine (ID "") or replaces one's fields; either confirms it at Now. The
// caller checked the fields' meaning (the OS release's format, the date's range); the store checks
// their sizes and the name's uniqueness.
type MachinePutParams struct {
	ID                              string
	Name, Purpose, Owner, OSRelease string
	RetireBy                        time.Time
	By                              string
	Now                             time.Time
}

type MachineGetParams struct{ ID string }

type MachineConfirmParams struct {
	ID  string
	By  string
	Now time.Time
}

type MachineRemoveParams struct{ ID string }

// JobNewestOutputsParams asks for the newest completed job of each of Words on every node.
type JobNewestOutputsParams struct {
	Words []string // one or two words
}

// JobOutput is a node's newest completed job of a word, with its output.
type JobOutput struct {
	NodeID     string          `json:"node_id"`
	Word       string          `json:"word"`
	FinishedAt time.Time       `json:"finished_at"`
	Output     json.RawMessage `json:"output"`
}
