package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/backup.wasm"

// TestBackup: the word begins a run, stores the folder and commits, full and then incremental; a
// folder outside the node's policy fails the run, which writes no manifest.
func TestBackup(t *testing.T) {
	srv := backuptest.Start(t)
	target := srv.Target(srv.Bucket(t, "backups"), "")
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	data, other := filepath.Join(t.TempDir(), "data"), t.TempDir()
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithBackup(&backup.Policy{Paths: []string{data}}, filepath.Join(t.TempDir(), "backup")))
	grant := func(parent string) wasm.RunOptions {
		g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "n1", Parent: parent, Recipients: []string{id.Recipient().String()}, Objects: 8})
		if err != nil {
			t.Fatal(err)
		}
		return wasm.RunOptions{Grant: g}
	}
	var out struct {
		Run, Kind, Manifest string
		Files               struct{ Files, Stored int64 }
	}
	for i, kind := range []string{backup.KindFull, backup.KindIncremental} {
		parent := out.Run
		res := w.RunWith(map[string]any{"paths": []string{data}}, grant(parent))
		if res.Outcome != wasm.Completed {
			t.Fatalf("run %d: %s %s", i, res.Code, res.Message)
		}
		if err := json.Unmarshal(res.Output, &out); err != nil {
			t.Fatal(err)
		}
		if out.Kind != kind || out.Files.Files != 1 || !strings.HasSuffix(out.Manifest, "/"+out.Run+"/"+backup.ManifestName) {
			t.Fatalf("run %d: %+v", i, out)
		}
	}
	if out.Files.Stored != 0 {
		t.Fatalf("an unchanged file was stored again: %+v", out)
	}

	res := w.RunWith(map[string]any{"paths": []string{other}}, grant(""))
	if res.Code != errcode.BackupPathRefused {
		t.Fatalf("a folder outside the policy: %s %s", res.Code, res.Message)
	}
	if got := len(srv.Manifests(t, target, "n1")); got != 2 {
		t.Fatalf("%d restore points, want the two committed runs", got)
	}
	if res := w.Run(map[string]any{"mode": "full"}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("nothing to back up: %s", res.Code)
	}
}
