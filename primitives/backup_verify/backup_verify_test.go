package main_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// TestVerify: a committed run verifies with the node's key; without a read grant the word is refused
// with backup.grant_missing.
func TestVerify(t *testing.T) {
	srv := backuptest.Start(t)
	target := srv.Target(srv.Bucket(t, "backups"), "")
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := wordtest.WithBackup(&backup.Policy{Paths: []string{data}}, filepath.Join(t.TempDir(), "backup"))
	b := wordtest.Load(t, "../../build/wasm/backup.wasm", "../backup/manifest.json", node)
	g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "n1", Recipients: []string{id.Recipient().String()}, Objects: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res := b.RunWith(map[string]any{"paths": []string{data}}, wasm.RunOptions{Grant: g}); res.Outcome != wasm.Completed {
		t.Fatalf("backup: %s %s", res.Code, res.Message)
	}

	v := wordtest.Load(t, "../../build/wasm/backup_verify.wasm", "manifest.json", node)
	chain := srv.ReadGrant(t, target, "n1", "")
	res := v.RunWith(nil, wasm.RunOptions{Grant: chain.Grant})
	if res.Outcome != wasm.Completed {
		t.Fatalf("verify: %s %s", res.Code, res.Message)
	}
	if res := v.Run(nil); res.Code != errcode.BackupGrantMissing {
		t.Fatalf("verify without a grant: %s", res.Code)
	}
}
