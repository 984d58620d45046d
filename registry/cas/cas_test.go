package cas_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestPutGetAndTamper(t *testing.T) {
	s, err := cas.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Put([]byte("\x00asm module"))
	if err != nil {
		t.Fatal(err)
	}
	if d != cas.Sum([]byte("\x00asm module")) || !strings.HasSuffix(s.Path(d), "/sha256/"+d) {
		t.Fatalf("digest %s path %s", d, s.Path(d))
	}
	got, err := s.Get(d)
	if err != nil || string(got) != "\x00asm module" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := os.WriteFile(s.Path(d), []byte("\x00asm evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(d); errcode.Code(err) != errcode.ModuleDigestMismatch {
		t.Fatalf("altered blob: %v", err)
	}
	if err := s.Verify(d); errcode.Code(err) != errcode.ModuleDigestMismatch {
		t.Fatalf("Verify altered blob: %v", err)
	}
	// Put heals an altered blob rather than trusting the name.
	if _, err := s.Put([]byte("\x00asm module")); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(d); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	s, _ := cas.Open(t.TempDir())
	if _, err := s.Get("../../etc/passwd"); errcode.Code(err) != errcode.ModuleNotFound {
		t.Fatalf("path as digest: %v", err)
	}
	if _, err := s.Get(strings.Repeat("a", 64)); errcode.Code(err) != errcode.ModuleNotFound {
		t.Fatalf("absent: %v", err)
	}
	if err := s.PutAs(strings.Repeat("b", 64), []byte("x")); errcode.Code(err) != errcode.ModuleDigestMismatch {
		t.Fatalf("PutAs wrong digest: %v", err)
	}
	if s.Has(strings.Repeat("b", 64)) {
		t.Fatal("refused PutAs left a blob")
	}
}

func TestPutReaderLeavesNoTemp(t *testing.T) {
	root := t.TempDir()
	s, _ := cas.Open(root)
	d, n, err := s.PutReader(strings.NewReader(strings.Repeat("z", 1<<20)))
	if err != nil || n != 1<<20 {
		t.Fatal(n, err)
	}
	list, _ := s.List()
	if len(list) != 1 || list[0] != d {
		t.Fatalf("List = %v", list)
	}
	entries, _ := os.ReadDir(root + "/sha256")
	if len(entries) != 1 {
		t.Fatalf("stray files: %v", entries)
	}
}

// TestReadDoesNotRehash: Read gives the bytes as they are, altered ones included (its reader checks
// them itself), and refuses what Get refuses for want of a blob.
func TestReadDoesNotRehash(t *testing.T) {
	s, err := cas.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Put([]byte("module"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read(d); err != nil || string(b) != "module" {
		t.Fatalf("Read: %q, %v", b, err)
	}
	if err := os.WriteFile(s.Path(d), []byte("altered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read(d); err != nil || string(b) != "altered" {
		t.Fatalf("Read of altered bytes: %q, %v", b, err)
	}
	if _, err := s.Get(d); !errcode.Has(err, errcode.ModuleDigestMismatch) {
		t.Fatalf("Get of altered bytes: %v", err)
	}
	if _, err := s.Read(strings.Repeat("0", 64)); !errcode.Has(err, errcode.ModuleNotFound) {
		t.Fatalf("Read of a missing blob: %v", err)
	}
	if _, err := s.Read("../x"); !errcode.Has(err, errcode.ModuleNotFound) {
		t.Fatalf("Read of a non-digest: %v", err)
	}
}
