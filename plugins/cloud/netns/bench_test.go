package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
)

// BenchmarkInstance is one instance's life on the netns cloud, split as provisioning splits it:
// create (state, namespace, veth, addresses, the user data started), until running (a user data run
// that writes a file and enables one service), and delete (services killed, namespace gone).
func BenchmarkInstance(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ctx := context.Background()
	d := &Driver{log: slog.New(slog.DiscardHandler)}
	raw := []byte(`{"root": "` + filepath.Join(b.TempDir(), "state") + `", "range": "10.213.109.0/24"}`)
	if err := d.SetConfig(ctx, settingsConfigRaw(raw)); err != nil {
		b.Fatal(err)
	}
	const ud = `#cloud-config
write_files:
  - path: /etc/systemd/system/idle.service
    content: |
      [Service]
      ExecStart=/bin/sleep 1000000
runcmd:
  - systemctl enable --now idle
`
	var create, running, del time.Duration
	// The status is polled, as a caller of the contract polls it: nothing else says it changed.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for b.Loop() {
		t0 := time.Now()
		in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "bench", UserData: ud})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for {
			got, err := d.GetInstance(ctx, in.ID)
			if err != nil || got.Status == cloud.StatusFailed {
				b.Fatalf("%+v %v", got, err)
			}
			if got.Status == cloud.StatusRunning {
				break
			}
			<-tick.C
		}
		t2 := time.Now()
		if err := d.DeleteInstance(ctx, in.ID); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		create += t1.Sub(t0)
		running += t2.Sub(t1)
		del += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(create.Milliseconds())/n, "create-ms")
	b.ReportMetric(float64(running.Milliseconds())/n, "to-running-ms")
	b.ReportMetric(float64(del.Milliseconds())/n, "delete-ms")
}
