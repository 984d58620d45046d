// Command dns is a DNS driver for host/goplugin's tests: the SDK's in-memory mock, plus zones that make
// it misbehave on purpose (crash.test. panics mid-call with the credential in its message, hang.test.
// never answers, log.test. logs the credential, snoop.test. tries to read every path in $SNOOP and logs
// each result, status.test. answers with a bare gRPC status holding
// the credential, as a driver not built on the SDK could).
//
// It is served like dns.Serve, but with no scrubbing of its own: what reaches the plane clean was
// cleaned by the host.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	dnspb "github.com/lexicon-fleet/lexicon/sdk/driver/dns/proto"
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
	case "snoop.test.":
		// Try to read what a driver must never reach: every path in SNOOP, each attempt logged.
		for _, p := range strings.Split(os.Getenv("SNOOP"), ":") {
			if p == "" {
				continue
			}
			var err error
			if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
				_, err = os.ReadDir(p)
			} else {
				_, err = os.ReadFile(p)
			}
			slog.Info("snoop-test: read", "path", p, "result", fmt.Sprint(err))
		}
		return nil, nil
	case "log.test.":
		slog.Info("log-test: the credential is " + cred)
		return nil, nil
	}
	return t.Mock.GetRecords(ctx, zone)
}

// bareStatus answers GetRecords of status.test. before the SDK's server (which would scrub and code the
// answer) sees the call: a bare gRPC status, the credential in its message.
func (t *testDriver) bareStatus(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*dnspb.ZoneRequest); ok && info.FullMethod == dnspb.DNS_GetRecords_FullMethodName {
		if z, _ := dns.NormalizeZone(r.GetZone()); z == "status.test." {
			t.mu.Lock()
			cred := t.cred.Reveal()
			t.mu.Unlock()
			return nil, status.Error(codes.PermissionDenied, "provider refused the token "+cred)
		}
	}
	return next(ctx, req)
}

func main() {
	t := &testDriver{Mock: &dns.Mock{}}
	stderr := os.Stderr // go-plugin replaces os.Stderr while serving
	slog.SetDefault(slog.New(driver.NewLogHandler(stderr, &driver.Scrubber{}, slog.LevelInfo)))
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  driver.Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{dns.APIVersion1: {dns.PluginName: &dns.Plugin{Impl: t}}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.UnaryInterceptor(t.bareStatus))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "testdriver-dns", Level: hclog.Info, Output: stderr, JSONFormat: true}),
	})
}
