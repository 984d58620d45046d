// Package backups is the plane's side of node backups: the S3-compatible targets (their secrets sealed
// at rest, each checked by a probe when it is saved), the policies (a fleet default every node follows
// unless it has its own or a recorded off), the schedule that dispatches backup and verify jobs with
// their presigned grants, the witness that checks a node's claimed run against the plane's own listing
// of the bucket, retention by whole chains, and each node's backup health.
package backups

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// Store is what the backups room reads and writes.
type Store interface {
	BackupTargetCreate(ctx context.Context, p store.BackupTargetCreateParams) (store.BackupTarget, error)
	BackupTargetGet(ctx context.Context, p store.BackupTargetGetParams) (store.BackupTarget, error)
	BackupTargetList(ctx context.Context, p store.BackupTargetListParams) ([]store.BackupTarget, error)
	BackupTargetDelete(ctx context.Context, p store.BackupTargetDeleteParams) error
	BackupPolicySet(ctx context.Context, p store.BackupPolicySetParams) (store.BackupPolicy, error)
	BackupPolicyList(ctx context.Context, p store.BackupPolicyListParams) ([]store.BackupPolicy, error)
	BackupPolicyDelete(ctx context.Context, p store.BackupPolicyDeleteParams) error
	BackupJobCreate(ctx context.Context, p store.BackupJobCreateParams) (store.BackupJob, error)
	BackupJobGet(ctx context.Context, p store.BackupJobGetParams) (store.BackupJob, error)
	BackupJobList(ctx context.Context, p store.BackupJobListParams) ([]store.BackupJob, error)
	BackupJobListRecent(ctx context.Context, p store.BackupJobListRecentParams) (map[string][]store.BackupJob, error)
	BackupJobSetRun(ctx context.Context, p store.BackupJobSetRunParams) error
	BackupJobJudge(ctx context.Context, p store.BackupJobJudgeParams) (bool, error)
	BackupFindingsSet(ctx context.Context, p store.BackupFindingsSetParams) error
	BackupFindingsList(ctx context.Context, p store.BackupFindingsListParams) ([]store.BackupNodeFinding, error)
	JobGet(ctx context.Context, p store.JobGetParams) (store.Job, error)
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
}

// Jobs queues the jobs the schedule dispatches (the jobs room), each with the plane's record of it in
// the same transaction.
type Jobs interface {
	CreateBackup(ctx context.Context, who api.Token, req api.JobRequest, b store.BackupJob) (api.Job, error)
}

// Defaults of the fleet's policy when none was ever set, and the floor no policy goes below.
const (
	DefaultEvery       = 24 * time.Hour
	DefaultKeepDays    = 14
	DefaultVerifyEvery = 7 * 24 * time.Hour
	// FloorDays is the fewest days of runs retention keeps, whatever a policy says. It is a constant
	// of the build, not a setting: a floor anyone with the plane's configuration could lower would
	// not stop a mistaken or hostile change from shortening the fleet's history.
	FloorDays = 7
)

// Config sets up the room.
type Config struct {
	Store Store
	// Key seals and opens the targets' secrets.
	Key seal.Keyring
	// Jobs queues backup and verify jobs; nil: the schedule dispatches nothing.
	Jobs Jobs
	// Nodes finds a node by id or name; nil takes every reference as an id.
	Nodes *nodes.Room
	Log   *slog.Logger
	Now   func() time.Time
}

// Room is the backups' Go API, which the HTTP server, the web UI and the schedule call.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

func (r *Room) now() time.Time { return r.c.Now().UTC() }
