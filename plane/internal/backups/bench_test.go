package backups_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
)

// BenchmarkWitnessListing10k is the witness's listing of a node's prefix holding 10,000 objects
// (100 runs of 100) on versitygw: what every judged run costs the plane before it reads a manifest.
// The objects are written as the POSIX backend's own files, so the setup does not time PUTs.
func BenchmarkWitnessListing10k(b *testing.B) {
	srv := backuptest.Start(b)
	bucket := srv.Bucket(b, "backups")
	t := srv.Target(bucket, "fleet")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range 100 {
		run := backup.NewRunID(start.Add(time.Duration(r)*time.Hour), "")
		dir := filepath.Join(srv.Dir, bucket, "fleet", "node-1", run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := 1; i <= 100; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%06d.age", i)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	client, err := presign.Client(t)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		l, err := backups.List(ctx, client, t, "node-1")
		if err != nil || len(l) != 10_000 {
			b.Fatalf("listed %d: %v", len(l), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/listing")
}
