package joblock_test

import (
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestOneHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lock")
	first, err := joblock.TryAcquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := joblock.TryAcquire(path); errcode.Code(err) != errcode.AgentBusy {
		t.Fatalf("second holder: %v", err)
	}
	first.Release()
	again, err := joblock.TryAcquire(path)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
}
