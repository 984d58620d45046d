// Command dns is a DNS driver for host/goplugin's tests: the SDK's in-memory mock, plus zones that make
// it misbehave on purpose (crash.test. panics mid-call with the credential in its message, hang.test.
// never answers, log.test. logs the credential).
package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

type testDriver struct {
	*dns.Mock
	mu   sync.Mutex
	cred driver.Secret
}

func (t *testDriver) SetConfig(ctx context.Context, cfg driver.Config) error {
	if err := t.Mock.SetConfig(ctx, cfg); err != nil {
		return err
	}
	t.mu.Lock()
	t.cred = cfg.Credential
	t.mu.Unlock()
	return nil
}

func (t *testDriver) GetRecords(ctx context.Context, zone string) ([]dns.Record, error) {
	t.mu.Lock()
	cred := t.cred.Reveal()
	t.mu.Unlock()
	z, _ := dns.NormalizeZone(zone)
	switch z {
	case "crash.test.":
		panic("driver lost its mind holding credential " + cred)
	case "hang.test.":
		slog.Info("hang-test: holding the call")
		<-ctx.Done()
		<-make(chan struct{}) // and never answer, even when the host gives up
	case "log.test.":
		slog.Info("log-test: the credential is " + cred)
		return nil, nil
	}
	return t.Mock.GetRecords(ctx, zone)
}

func main() { dns.Serve(&testDriver{Mock: &dns.Mock{}}) }
