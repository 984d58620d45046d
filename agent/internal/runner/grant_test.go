package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestJobGrantReachesTheHostOnly: a backup job's grant goes from the job to the word host, which backs
// up with it; nothing the node reports to the plane, output, transcript or capability record, carries
// any of it. The same job without a grant is refused by the host with backup.grant_missing.
func TestJobGrantReachesTheHostOnly(t *testing.T) {
	srv := backuptest.Start(t)
	target := srv.Target(srv.Bucket(t, "backups"), "fleet")
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "n1", Recipients: []string{id.Recipient().String()}, Objects: 8})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := vocabtest.Build(t, vocabtest.Module{Manifest: "../../../primitives/backup/manifest.json", File: "../../../build/wasm/backup.wasm"}).Open(t)
	w, ok := v.Word("backup")
	if !ok {
		t.Fatal("the vocabulary has no backup word")
	}
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"classes":{"change":"accept"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	host, err := wasm.New(t.Context(), wasm.Config{Isolation: wasm.InProcess,
		Backup: &wasm.BackupConfig{Policy: &backup.Policy{Paths: []string{data}}, Dir: filepath.Join(dir, "backup")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	r := &runner.Runner{Host: host, Vocab: v, PolicyFile: policy, LockFile: filepath.Join(dir, "job.lock")}
	job := channel.Job{ID: "j1", Word: "backup", Digest: w.Module, Class: "change", Params: json.RawMessage(`{"paths": ["` + data + `"]}`),
		Deadline: time.Now().Add(time.Minute), Grant: g}

	res := r.Run(t.Context(), job)
	if res.Outcome != channel.OutcomeCompleted {
		t.Fatalf("%s %s: %s", res.Outcome, res.Code, res.Message)
	}
	var out struct{ Run string }
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Run != g.Run {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	reported, _ := json.Marshal(res)
	if strings.Contains(string(reported), "X-Amz-Signature") || strings.Contains(string(reported), srv.Endpoint) {
		t.Fatalf("the result reported to the plane carries the grant: %s", reported)
	}
	if _, ok := srv.Manifests(t, target, "n1")[g.Run]; !ok {
		t.Fatal("the run is not in the bucket")
	}

	job.ID, job.Grant = "j2", nil
	if res := r.Run(t.Context(), job); res.Code != errcode.BackupGrantMissing {
		t.Fatalf("a job without its grant: %s %s", res.Code, res.Message)
	}
}
