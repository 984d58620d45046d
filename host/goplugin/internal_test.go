package goplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// go-plugin's SecureConfig writes the file into its hasher and never resets it: a hasher kept between
// starts refuses the second start of a good binary. This is why every start builds its own.
func TestReusedHasherFailsTheSecondCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bin")
	data := []byte("#!/bin/sh\nexit 0\n")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	shared := &plugin.SecureConfig{Checksum: sum[:], Hash: sha256.New()}
	if ok, err := shared.Check(path); !ok || err != nil {
		t.Fatalf("first check: %v, %v", ok, err)
	}
	if ok, _ := shared.Check(path); ok {
		t.Fatal("a reused hasher passed the second check: the premise of this test is wrong")
	}
	for i := range 2 {
		if ok, err := secureConfig(sum[:]).Check(path); !ok || err != nil {
			t.Fatalf("fresh config, check %d: %v, %v", i+1, ok, err)
		}
	}
}

// The checksum go-plugin runs on the memfd refuses bytes that do not match the pinned digest, before
// exec, even if the store's own check were bypassed.
func TestSecureConfigRefusesOtherBytes(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "executed")
	evil := []byte("#!/bin/sh\ntouch " + marker + "\n")
	good := sha256.Sum256([]byte("the pinned driver"))
	d := &Driver{spec: Spec{Name: "x", Kind: driver.KindDNS, Digest: hex.EncodeToString(good[:])}, opts: Options{}.withDefaults()}
	d.log = d.opts.Logger
	_, err := d.launchFrom(context.Background(), bytes.NewReader(evil))
	if !errcode.Has(err, errcode.ModuleDigestMismatch) {
		t.Fatalf("launch of bytes that do not match = %v, want module.digest_mismatch", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the unpinned program ran")
	}
}

func TestSealedExecutableCannotChange(t *testing.T) {
	f, err := sealedExecutable("test", strings.NewReader("#!/bin/sh\n"), 100)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the read-only descriptor writes")
	}
	// Even a writable reopen cannot change sealed bytes.
	rw, err := os.OpenFile(fdPath(f), os.O_RDWR, 0)
	if err == nil {
		defer rw.Close()
		if _, err := rw.WriteAt([]byte("X"), 0); err == nil {
			t.Error("sealed memfd accepted a write")
		}
		if err := rw.Truncate(1); err == nil {
			t.Error("sealed memfd accepted a truncate")
		}
	}
}

func TestBackoffDoublesToItsCap(t *testing.T) {
	d := &Driver{opts: Options{MinBackoff: 100, MaxBackoff: 1000}.withDefaults()}
	want := map[int32]int64{1: 100, 2: 200, 3: 400, 4: 800, 5: 1000, 40: 1000}
	for n, w := range want {
		if got := d.backoff(n); int64(got) != w {
			t.Errorf("backoff(%d) = %d, want %d", n, got, w)
		}
	}
}

func TestSealedExecutableRefusesOversizedBlobs(t *testing.T) {
	if _, err := sealedExecutable("big", strings.NewReader(strings.Repeat("x", 101)), 100); !errors.Is(err, errTooLarge) {
		t.Fatalf("a blob over the cap: %v", err)
	}
}
