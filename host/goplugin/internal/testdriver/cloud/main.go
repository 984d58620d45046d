// Command cloud is a cloud driver for host/goplugin's and the plane's tests: the SDK's in-memory mock,
// plus labels that make it misbehave on purpose (creating an instance labelled "hang" never answers,
// one labelled "crash" panics mid-call). Built with -ldflags "-X main.variant=basic" it implements
// none of the optional features, as a driver of a provider without them would.
package main

import (
	"context"
	"log/slog"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
)

// variant is set at link time: "basic" leaves out the optional features.
var variant string

type testDriver struct{ *cloud.Mock }

func (t testDriver) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	switch req.Label {
	case "hang":
		slog.Info("hang-test: holding the call")
		<-ctx.Done()
		<-make(chan struct{}) // and never answer, even when the host gives up
	case "crash":
		panic("driver lost its mind mid-create")
	}
	return t.Mock.CreateInstance(ctx, req)
}

// basic hides every optional interface: only cloud.Driver's methods are promoted.
type basic struct{ cloud.Driver }

func main() {
	d := testDriver{&cloud.Mock{SwapRequiresStopped: true}}
	if variant == "basic" {
		cloud.Serve(basic{d})
		return
	}
	cloud.Serve(d)
}
