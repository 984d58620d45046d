package provision

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LeaseTransfer is the lease, on a provisioning's id, of the replica sampling its transfer.
const LeaseTransfer = "transfer"

// TransferEvery is how often an instance's transfer is sampled: providers report it per day at best.
const TransferEvery = 24 * time.Hour

// TransferStore is what the transfer watch reads and writes: joined provisionings, a lease on each while
// it samples, and the sample.
type TransferStore interface {
	ProvisioningList(ctx context.Context, p store.ProvisioningListParams) ([]store.Provisioning, error)
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
	ProvisioningTransferSet(ctx context.Context, p store.ProvisioningTransferParams) (store.Provisioning, error)
}

// TransferWatch samples the monthly transfer of every joined provisioning's instance once a day and
// records it; the store's plane:machine_transfer detector raises an incident when one passes 80% of
// its allowance (once: the incident stays open until a month's figure is below it). Every replica runs
// one; a lease per provisioning and the recorded sample time keep it to one sample a day.
type TransferWatch struct {
	services.EngineBase
	Store TransferStore
	Cloud Cloud
}

// Service looks every tick for samples that are due.
func (w *TransferWatch) Service(every time.Duration) *services.Periodic {
	return w.EngineBase.Service("transfer watch", every, w.Pass)
}

// Pass samples every joined provisioning whose last sample is a day old.
func (w *TransferWatch) Pass(ctx context.Context) error {
	list, err := w.Store.ProvisioningList(ctx, store.ProvisioningListParams{State: store.ProvJoined, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	for _, pr := range list {
		if pr.InstanceID == "" || w.Time().Sub(pr.TransferAt) < TransferEvery {
			continue
		}
		_, err := w.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: pr.ID, Name: LeaseTransfer, Holder: w.Holder,
			Purpose: "sample transfer", TTL: time.Hour, Now: w.Time()})
		if errcode.Has(err, errcode.LeaseHeld) {
			continue
		}
		if err != nil {
			return err
		}
		t, err := w.Cloud.Transfer(ctx, Actor(pr.ID), pr.Account, pr.InstanceID)
		if errcode.Has(err, errcode.CloudUnsupported) {
			t.UsedBytes, t.AllowanceBytes, err = 0, 0, nil // recorded as none, so it is asked again tomorrow, not every tick
		}
		if err != nil {
			w.Logger().Warn("transfer not sampled", "provisioning", pr.ID, "instance", pr.InstanceID, "err", err)
			continue
		}
		if _, err := w.Store.ProvisioningTransferSet(ctx, store.ProvisioningTransferParams{ID: pr.ID, Used: max(t.UsedBytes, 0),
			Allowance: max(t.AllowanceBytes, 0), Now: w.Time()}); err != nil {
			return err
		}
	}
	return nil
}
