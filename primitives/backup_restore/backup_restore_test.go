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
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// TestRestore: a committed run is restored into a new folder; a restore is of files or of a database,
// never both in one call.
func TestRestore(t *testing.T) {
	srv := backuptest.Start(t)
	target := srv.Target(srv.Bucket(t, "backups"), "")
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	data, restore := t.TempDir(), testkit.SafeDir(t)
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("content"), 0o640); err != nil {
		t.Fatal(err)
	}
	node := wordtest.WithBackup(&backup.Policy{Paths: []string{data}, RestorePaths: []string{restore}}, filepath.Join(t.TempDir(), "backup"))
	b := wordtest.Load(t, "../../build/wasm/backup.wasm", "../backup/manifest.json", node)
	g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "n1", Recipients: []string{id.Recipient().String()}, Objects: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res := b.RunWith(map[string]any{"paths": []string{data}}, wasm.RunOptions{Grant: g}); res.Outcome != wasm.Completed {
		t.Fatalf("backup: %s %s", res.Code, res.Message)
	}

	r := wordtest.Load(t, "../../build/wasm/backup_restore.wasm", "manifest.json", node)
	chain := srv.ReadGrant(t, target, "n1", "")
	into := filepath.Join(restore, "new")
	if res := r.RunWith(map[string]any{"into": into, "path": data}, wasm.RunOptions{Grant: chain.Grant}); res.Outcome != wasm.Completed {
		t.Fatalf("restore: %s %s", res.Code, res.Message)
	}
	got, err := os.ReadFile(filepath.Join(into, "f"))
	if err != nil || string(got) != "content" {
		t.Fatalf("restored %q, %v", got, err)
	}
	if res := r.Run(map[string]any{"into": into, "database": "app"}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("files and a database at once: %s", res.Code)
	}
}
