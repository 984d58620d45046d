package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// BackupTargetRequest is the body of POST /backups/targets: an S3-compatible bucket and the
// credentials that reach it. The secret is sealed on the plane and never answered or logged.
type BackupTargetRequest struct {
	Name            string `json:"name"`
	Endpoint        string `json:"endpoint"`
	Region          string `json:"region"`
	Bucket          string `json:"bucket"`
	Prefix          string `json:"prefix,omitempty"`
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	VirtualHosted   bool   `json:"virtual_hosted,omitempty"`
	// Recovery is the fleet's recovery recipient (age1...), made offline by `lexicon-release
	// backup-keygen`: every run is encrypted to it besides the node's own key.
	Recovery string `json:"recovery"`
}

// BackupTarget is a stored target, without its secret.
type BackupTarget struct {
	Name          string    `json:"name"`
	Endpoint      string    `json:"endpoint"`
	Region        string    `json:"region"`
	Bucket        string    `json:"bucket"`
	Prefix        string    `json:"prefix"`
	AccessKeyID   string    `json:"access_key_id"`
	VirtualHosted bool      `json:"virtual_hosted"`
	Recovery      string    `json:"recovery"`
	CreatedBy     string    `json:"created_by"`
	CreatedAt     time.Time `json:"created_at"`
}

// BackupTargetList is the answer of GET /backups/targets.
type BackupTargetList struct {
	Targets []BackupTarget `json:"targets"`
}

// BackupProbeSteps are the steps of a target's check, in order: each needs the one before.
var BackupProbeSteps = []string{"list", "put", "get", "delete"}

// BackupCheckStep is one step of a target's check: its outcome, and the code of its failure.
type BackupCheckStep struct {
	Step    string `json:"step"`
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// BackupCheck is the answer of POST /backups/targets/{name}/check: every step that ran.
type BackupCheck struct {
	Target string            `json:"target"`
	OK     bool              `json:"ok"`
	Steps  []BackupCheckStep `json:"steps"`
}

// BackupPolicy is how a node, or the fleet (node ""), is backed up. Durations are Go durations ("24h").
type BackupPolicy struct {
	Node        string   `json:"node,omitempty"`
	Enabled     bool     `json:"enabled"`
	Target      string   `json:"target"`
	Every       string   `json:"every"`
	KeepDays    int      `json:"keep_days"`
	VerifyEvery string   `json:"verify_every"`
	Paths       []string `json:"paths"`
	Databases   []string `json:"databases"`
	// Source says where a node's policy comes from: "node" (its own), "fleet" (the default), or
	// "default" (no fleet policy was ever set: the built-in one, with no target).
	Source    string    `json:"source"`
	UpdatedBy string    `json:"updated_by,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// UnmarshalJSON refuses a policy that does not say whether backups are on: an empty body would
// otherwise read as a recorded "off", turning backups off for the fleet or the node by accident.
// Unknown fields are refused, as for every body.
func (p *BackupPolicy) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	if _, ok := fields["enabled"]; !ok {
		return errcode.New(errcode.RequestMalformed, "a backup policy says enabled: true, or false to record that backups are off").
			With(errcode.DetailField, "enabled")
	}
	type plain BackupPolicy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(p))
}

// BackupPolicyList is the answer of GET /backups/policies: the fleet's, then each node's own.
type BackupPolicyList struct {
	Fleet BackupPolicy   `json:"fleet"`
	Nodes []BackupPolicy `json:"nodes"`
}

// BackupRun is one job the plane dispatched for a node's backups and its verdict.
type BackupRun struct {
	Job       string    `json:"job"`
	Purpose   string    `json:"purpose"`
	Target    string    `json:"target"`
	Run       string    `json:"run,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	State     string    `json:"state"`
	Bytes     int64     `json:"bytes"`
	Detail    string    `json:"detail,omitempty"`
	StartedAt time.Time `json:"started_at"`
	JudgedAt  time.Time `json:"judged_at,omitzero"`
}

// BackupHealth is a node's backups at a glance: green, or red with its reasons.
type BackupHealth struct {
	NodeID       string    `json:"node_id"`
	Node         string    `json:"node"`
	Policy       string    `json:"policy"` // on, off (recorded), or none (no target)
	Green        bool      `json:"green"`
	Reasons      []string  `json:"reasons"`
	LastRun      time.Time `json:"last_run,omitzero"`
	LastRunState string    `json:"last_run_state,omitempty"`
	LastFull     time.Time `json:"last_full,omitzero"`
	LastVerified time.Time `json:"last_verified,omitzero"`
	Bytes        int64     `json:"bytes"`
}

// BackupFleet is the answer of GET /backups: every node's backup health.
type BackupFleet struct {
	Nodes []BackupHealth `json:"nodes"`
}

// BackupNode is the answer of GET /backups/nodes/{node}: its health, policy and recent jobs.
type BackupNode struct {
	Health BackupHealth `json:"health"`
	Policy BackupPolicy `json:"policy"`
	Runs   []BackupRun  `json:"runs"`
}

// BackupRestoreRequest is the body of POST /backups/nodes/{id}/restore: a restore of one of the node's
// witnessed runs (its chain applied in order) by the backup_restore word, queued as a job that the
// plane hands a read grant of that chain when the node claims it. Either files (Into, and Path for
// one folder of the tree rather than all of it) or a database (Database, restored into IntoDatabase or
// its own name), which must not exist yet on the node.
type BackupRestoreRequest struct {
	// Run is the run restored; "": the node's newest witnessed run.
	Run          string `json:"run,omitempty"`
	Into         string `json:"into,omitempty"`
	Path         string `json:"path,omitempty"`
	Database     string `json:"database,omitempty"`
	IntoDatabase string `json:"into_database,omitempty"`
}
