package drivers

import (
	"context"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// AppendByHand adds records to a zone through the account's driver process without the reconciler
// and without an audit record: what a person does with the provider's own console.
func (m *Manager) AppendByHand(ctx context.Context, account, zone string, recs []dns.Record) error {
	u, err := m.resolve(ctx, "test", account, driver.KindDNS)
	if err != nil {
		return err
	}
	n, err := u.d.DNS()
	if err != nil {
		return err
	}
	_, err = n.AppendRecords(ctx, zone, recs)
	return err
}
