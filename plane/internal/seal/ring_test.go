package seal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestRingRefusesUntrustedKeyFilesBeside: a .prev or .next key file group or others can read, or a
// symlink, is key.file_untrusted, as master.key is: a rotation's files get the same checks.
func TestRingRefusesUntrustedKeyFilesBeside(t *testing.T) {
	for _, suffix := range []string{seal.PrevSuffix, seal.NextSuffix} {
		path := filepath.Join(t.TempDir(), "data", "master.key")
		if _, err := seal.OpenRing(path); err != nil {
			t.Fatal(err)
		}
		text, _ := os.ReadFile(path)
		if err := os.WriteFile(path+suffix, text, 0o640); err != nil {
			t.Fatal(err)
		}
		_, err := seal.OpenRing(path)
		testkit.WantCode(t, err, errcode.KeyFileUntrusted)
		os.Remove(path + suffix)
		if err := os.Symlink(path, path+suffix); err != nil {
			t.Fatal(err)
		}
		_, err = seal.LoadRing(path)
		testkit.WantCode(t, err, errcode.KeyFileUntrusted)
	}
}

// TestRingOpensUnderEveryKeyItHolds: a value sealed under .next or .prev opens through the ring, by key
// id or by trying; one sealed under no key of the ring is account.seal_broken.
func TestRingOpensUnderEveryKeyItHolds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "master.key")
	ring, err := seal.OpenRing(path)
	if err != nil {
		t.Fatal(err)
	}
	next, err := seal.LoadOrCreate(path + seal.NextSuffix) // as a rotation in another process writes it
	if err != nil {
		t.Fatal(err)
	}
	box := next.Seal([]byte("secret"), []byte("ctx"))
	if plain, err := ring.Open(box, []byte("ctx")); err != nil || string(plain) != "secret" {
		t.Fatalf("Open under .next: %q %v", plain, err)
	}
	if plain, err := ring.OpenAs(box, []byte("ctx"), next.ID()); err != nil || string(plain) != "secret" {
		t.Fatalf("OpenAs under .next: %q %v", plain, err)
	}
	stranger, err := seal.LoadOrCreate(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ring.Open(stranger.Seal([]byte("x"), nil), nil)
	testkit.WantCode(t, err, errcode.AccountSealBroken)
	if _, id := ring.SealWithID([]byte("x"), nil); id == next.ID() {
		t.Fatal("the ring seals under .next before it became master.key")
	}
}
