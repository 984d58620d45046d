package backups

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// GrantExpires is how long a grant's requests work from the claim: a run's wall time (15 minutes at
// most) with room to spare.
const GrantExpires = time.Hour

// Grant is the grant a backup or verify job the schedule dispatched carries, made when the node
// claims the job (so the requests' hour starts then, and no presigned request is ever stored): a write
// grant of fresh keys for a backup, a read grant of the run's chain for a verify or a restore. A job
// the backups room did not record (a backup_restore queued by hand with lexicon jobs run) gets none
// (nil, nil).
func (r *Room) Grant(ctx context.Context, job store.Job) (*channel.BackupGrant, error) {
	bj, err := r.c.Store.BackupJobGet(ctx, store.BackupJobGetParams{JobID: job.ID})
	if errcode.Has(err, errcode.JobNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := r.target(ctx, bj.Target)
	if err != nil {
		return nil, err
	}
	signer, err := presign.New(t)
	if err != nil {
		return nil, err
	}
	if bj.Purpose == store.BackupPurposeVerify || bj.Purpose == store.BackupPurposeRestore {
		return r.readGrant(ctx, signer, t, bj)
	}
	row, err := r.c.Store.BackupTargetGet(ctx, store.BackupTargetGetParams{Name: bj.Target})
	if err != nil {
		return nil, err
	}
	g, err := signer.WriteGrant(ctx, presign.WriteRequest{Node: bj.NodeID, Parent: bj.Parent, Recipients: []string{row.Recovery},
		Objects: bj.Objects, Expires: GrantExpires, Now: r.now()})
	if err != nil {
		return nil, err
	}
	if err := r.c.Store.BackupJobSetRun(ctx, store.BackupJobSetRunParams{JobID: job.ID, Run: g.Run}); err != nil {
		return nil, err
	}
	return g, nil
}

// readGrant grants reading the chain of the job's run, from the manifests the plane reads itself.
func (r *Room) readGrant(ctx context.Context, signer *presign.Signer, t presign.Target, bj store.BackupJob) (*channel.BackupGrant, error) {
	chain, err := r.chainManifests(ctx, t, bj.NodeID, bj.Chain, bj.Run)
	if err != nil {
		return nil, err
	}
	return signer.ReadGrant(ctx, bj.NodeID, chain, GrantExpires)
}

// Needs says whether a job of word may carry a grant: the words the schedule dispatches, and restores.
func (r *Room) Needs(word string) bool {
	return word == WordBackup || word == WordVerify || word == WordRestore
}
