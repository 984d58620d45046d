package seal_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func TestCreatedOnFirstLoadPrivateAndStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "master.key")
	k1, err := seal.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %o, want 600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("key folder mode %o, want 700", di.Mode().Perm())
	}
	k2, err := seal.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID() != k2.ID() || len(k1.ID()) != 16 {
		t.Fatalf("ids %s and %s", k1.ID(), k2.ID())
	}
	ctx := seal.AccountContext("prod", "dns-memory")
	plain, err := k2.Open(k1.Seal([]byte("tok-123"), ctx), ctx)
	if err != nil || string(plain) != "tok-123" {
		t.Fatalf("open = %q, %v", plain, err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(k1.String(), strings.TrimSpace(string(raw))) || !strings.Contains(k1.String(), k1.ID()) {
		t.Fatalf("String() = %q", k1.String())
	}
}

func TestConcurrentCreatorsAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := seal.LoadOrCreate(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("creators disagree: %v", ids)
		}
	}
}

func TestUntrustedKeyFilesRefused(t *testing.T) {
	good := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "master.key")
		if _, err := seal.LoadOrCreate(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		code  string
	}{
		{"readable by group", func(t *testing.T) string {
			p := good(t)
			must(t, os.Chmod(p, 0o640))
			return p
		}, errcode.KeyFileUntrusted},
		{"readable by others", func(t *testing.T) string {
			p := good(t)
			must(t, os.Chmod(p, 0o604))
			return p
		}, errcode.KeyFileUntrusted},
		{"symlink", func(t *testing.T) string {
			p := good(t)
			link := filepath.Join(filepath.Dir(p), "link.key")
			must(t, os.Symlink(p, link))
			return link
		}, errcode.KeyFileUntrusted},
		{"folder writable by others", func(t *testing.T) string {
			p := good(t)
			must(t, os.Chmod(filepath.Dir(p), 0o777))
			return p
		}, errcode.KeyFileUntrusted},
		{"not a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "master.key")
			must(t, os.Mkdir(p, 0o700))
			return p
		}, errcode.KeyFileUntrusted},
		{"not a key", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "master.key")
			must(t, os.WriteFile(p, []byte("hunter2\n"), 0o600))
			return p
		}, errcode.KeyMalformed},
		{"short key", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "master.key")
			must(t, os.WriteFile(p, []byte("lexicon-master-key-v1:AAAA\n"), 0o600))
			return p
		}, errcode.KeyMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.setup(t)
			_, err := seal.LoadOrCreate(p)
			testkit.WantCode(t, err, c.code)
		})
	}
	// A refused key file is never replaced by a fresh key.
	p := good(t)
	before, _ := os.ReadFile(p)
	must(t, os.Chmod(p, 0o644))
	if _, err := seal.LoadOrCreate(p); err == nil {
		t.Fatal("a world-readable key was accepted")
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Fatal("a refused key file was rewritten")
	}
	if _, err := seal.Load(filepath.Join(t.TempDir(), "none.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing key: %v", err)
	}
}

func TestSealedCredentialBoundToAccountAndKey(t *testing.T) {
	k, err := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := seal.New(bytes.Repeat([]byte{8}, seal.KeySize))
	ctx := seal.AccountContext("prod", "dns-memory")
	box := k.Seal([]byte("s3cret-token"), ctx)
	if bytes.Contains(box, []byte("s3cret")) {
		t.Fatal("sealed bytes hold the plaintext")
	}
	if again := k.Seal([]byte("s3cret-token"), ctx); bytes.Equal(again, box) {
		t.Fatal("two seals of one credential are equal: the nonce is not fresh")
	}
	flipped := bytes.Clone(box)
	flipped[len(flipped)-1] ^= 1
	for name, c := range map[string]struct {
		key *seal.Key
		box []byte
		ctx []byte
	}{
		"other account": {k, box, seal.AccountContext("lab", "dns-memory")},
		"other driver":  {k, box, seal.AccountContext("prod", "dns-rfc2136")},
		"other key":     {other, box, ctx},
		"altered":       {k, flipped, ctx},
		"truncated":     {k, box[:10], ctx},
		"empty":         {k, nil, ctx},
	} {
		if _, err := c.key.Open(c.box, c.ctx); !errcode.Has(err, errcode.AccountSealBroken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := seal.New(make([]byte, 16)); !errcode.Has(err, errcode.KeyMalformed) {
		t.Fatalf("16-byte key: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzOpen feeds arbitrary sealed bytes, as they could be found in an altered database, to Open: it
// must never panic, and never open what Seal did not make.
func FuzzOpen(f *testing.F) {
	k, _ := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	ctx := seal.AccountContext("prod", "dns-memory")
	f.Add(k.Seal([]byte("token"), ctx))
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, sealed []byte) {
		plain, err := k.Open(sealed, ctx)
		if err == nil && string(plain) != "token" {
			t.Fatalf("opened forged bytes to %q", plain)
		}
	})
}
