package provision

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LeaseTransfer is the lease, on a provisioning's id, of the replica sampling its transfer.
const LeaseTransfer = "transfer"

// TransferEvery is how often an instance's transfer is sampled: providers report it per day at best.
const TransferEvery = 24 * time.Hour

// TransferWatch samples the monthly transfer of every joined provisioning's instance once a day and
// records it; the store's plane:machine_transfer detector raises an incident when one passes 80% of
// its allowance (once: the incident stays open until a month's figure is below it). Every replica runs
// one; a lease per provisioning and the recorded sample time keep it to one sample a day.
type TransferWatch struct {
	Store store.Store
	Cloud Cloud
	// Holder names this replica in leases.
	Holder string
	Log    *slog.Logger
	Now    func() time.Time
}

// Service looks every tick for samples that are due.
func (w *TransferWatch) Service(every time.Duration) *services.Periodic {
	return &services.Periodic{Name: "transfer watch", Every: every, RunAtStart: true, Step: func(ctx context.Context) {
		if err := w.Pass(ctx); err != nil && ctx.Err() == nil {
			w.log().Warn("transfer watch pass failed", "err", err)
		}
	}}
}

func (w *TransferWatch) log() *slog.Logger {
	if w.Log == nil {
		return slog.Default()
	}
	return w.Log
}

func (w *TransferWatch) now() time.Time {
	if w.Now == nil {
		return time.Now().UTC()
	}
	return w.Now().UTC()
}

// Pass samples every joined provisioning whose last sample is a day old.
func (w *TransferWatch) Pass(ctx context.Context) error {
	list, err := w.Store.ProvisioningList(ctx, store.ProvisioningListParams{State: store.ProvJoined, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	for _, pr := range list {
		if pr.InstanceID == "" || w.now().Sub(pr.TransferAt) < TransferEvery {
			continue
		}
		_, err := w.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: pr.ID, Name: LeaseTransfer, Holder: w.Holder,
			Purpose: "sample transfer", TTL: time.Hour, Now: w.now()})
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
			w.log().Warn("transfer not sampled", "provisioning", pr.ID, "instance", pr.InstanceID, "err", err)
			continue
		}
		if _, err := w.Store.ProvisioningTransferSet(ctx, store.ProvisioningTransferParams{ID: pr.ID, Used: max(t.UsedBytes, 0),
			Allowance: max(t.AllowanceBytes, 0), Now: w.now()}); err != nil {
			return err
		}
	}
	return nil
}
