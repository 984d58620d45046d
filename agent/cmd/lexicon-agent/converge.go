package main

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/client"
	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// hostConfig is the word host run gives its words: the compile cache (a look word not compiled into
// it yet runs on the interpreter meanwhile), the node's own names and
// renewal program from the policy loaded at start, and for the footprint capabilities the policy's
// converge section read again for each converge (an owner narrowing it needs no restart), the plane
// to fetch files from, where to keep what they stage and record, and the agent's own folders, which
// they never write.
func (d *dirs) hostConfig(sd state.Dir, pol *policy.Policy, plane wasm.Fetcher, log *slog.Logger) wasm.Config {
	policyFile := d.policyFile()
	return wasm.Config{
		CacheDir: sd.WasmCache(), CacheKeyFile: sd.WasmCacheKey(), InterpretUncached: true, Self: pol.Names, Renewal: pol.Renewal, Logger: log,
		PackagePolicy: pol.Packages,
		Backup:        backupConfig(pol, sd),
		Converge:      func() (*footprint.Bounds, error) { return policy.Load(policyFile).ConvergeBounds() },
		Artifacts:     plane,
		ConvergeDir:   sd.ConvergeDir(),
		Reserved:      d.reserved(sd),
	}
}

// reserved are the agent's own folders, which no footprint capability writes beneath.
func (d *dirs) reserved(sd state.Dir) []string {
	return []string{absolute(d.config), absolute(string(sd))}
}

func absolute(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// planeFetcher fetches artifacts through the agent's channel client, the path the vocabulary fetches
// modules by digest on, once the agent has a client: a node that is not joined has no plane to fetch
// from.
type planeFetcher struct{ c atomic.Pointer[client.Client] }

func (f *planeFetcher) Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error) {
	c := f.c.Load()
	if c == nil {
		return nil, errcode.New(errcode.AgentNotJoined, "this node is not joined to a plane, so it has nowhere to fetch artifacts from")
	}
	return c.Artifact(ctx, query, limit)
}

var _ wasm.Fetcher = (*planeFetcher)(nil)

// pauseConverge makes a test build (agent.TestFault "pause") stop a converge for good at the footprint
// capabilities' step named in <dir>/test-pause ("artifact.staged", "fs.install.half",
// "fs.install.renamed", "pkg.ensure.done", "systemd.before_restart"), once, for a test to kill the
// agent there: the converge's counterpart of the update's test-pause. dir is the converge folder, the
// agent's own (no word writes beneath it).
func pauseConverge(dir string, log *slog.Logger) {
	marker := filepath.Join(dir, "test-pause")
	wasm.SetFault(func(step string) {
		at, err := os.ReadFile(marker)
		if err != nil || strings.TrimSpace(string(at)) != step {
			return
		}
		_ = os.Remove(marker)
		log.Info("converge paused for the test", "step", step)
		time.Sleep(1 << 62) // a sleeping goroutine keeps the runtime from calling this a deadlock
	})
}
