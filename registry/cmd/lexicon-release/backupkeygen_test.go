package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestBackupKeygen: the recovery key is a private age identity file and its recipient, in the forms
// Debian's age reads, and it is never overwritten.
func TestBackupKeygen(t *testing.T) {
	dir := t.TempDir()
	code, res := runJSON(t, "backup-keygen", "--out", dir)
	if code != 0 {
		t.Fatalf("backup-keygen: %d %v", code, res)
	}
	keyFile, pubFile := filepath.Join(dir, "recovery.key"), filepath.Join(dir, "recovery.pub")
	if res["key_file"] != keyFile || res["pub_file"] != pubFile {
		t.Fatalf("files %v %v", res["key_file"], res["pub_file"])
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", keyFile, fi, err)
	}
	id, err := backup.ReadIdentityFile(keyFile)
	must(t, err)
	pub, err := os.ReadFile(pubFile)
	must(t, err)
	if strings.TrimSpace(string(pub)) != id.Recipient().String() || res["recipient"] != id.Recipient().String() {
		t.Fatalf("the key, its .pub and the result disagree: %v", res)
	}
	// Debian's age-keygen derives the same recipient from the file.
	if ageKeygen, err := exec.LookPath("age-keygen"); err == nil || os.Getenv("CI") == "true" {
		out, err := exec.Command(ageKeygen, "-y", keyFile).Output()
		if err != nil || strings.TrimSpace(string(out)) != id.Recipient().String() {
			t.Fatalf("age-keygen -y: %q %v", out, err)
		}
	}
	if code, res := runJSON(t, "backup-keygen", "--out", dir); code != 1 || res["code"] != errcode.IOFailed {
		t.Fatalf("a second backup-keygen: %d %v", code, res)
	}
	if again, err := backup.ReadIdentityFile(keyFile); err != nil || again.String() != id.String() {
		t.Fatalf("the key file changed: %v", err)
	}
}
