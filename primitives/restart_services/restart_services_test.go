package main_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/restart_services.wasm"

type result struct {
	Restarted []struct {
		Unit        string
		BeforePID   int    `json:"before_pid"`
		AfterPID    int    `json:"after_pid"`
		ActiveState string `json:"active_state"`
	}
	Skipped    []struct{ Unit, Reason string }
	StillStale []int `json:"still_stale"`
}

// allowFixture adds the fixture's daemon to the word's allow-list, as a derived release would.
func allowFixture(m *manifest.Manifest) {
	for i := range m.Capabilities {
		if c := &m.Capabilities[i]; c.Cap == capv1.CapSystemdUnit || c.Cap == capv1.CapSystemdRestart {
			c.Units = append(c.Units, "lexfix-*.service")
		}
	}
}

// The daemon runs the library an upgrade replaced: its unit, named by the caller, is restarted; a
// named unit on current code and one outside the allow-list are not. (systemd is not running here:
// the units are a fake whose main pids are real processes in the Debian root.)
func TestRestartsTheStaleUnit(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	pid := r.StartDaemon(t)
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Lib+"=1.1")
	fresh := r.StartDaemon(t) // started after the fix: current code
	sd := wordtest.NewFakeSystemd(map[string]string{
		apttest.DaemonUnit:     fmt.Sprintf("Id=%s\nLoadState=loaded\nActiveState=active\nSubState=running\nMainPID=%d\n", apttest.DaemonUnit, pid),
		"lexfix-fresh.service": fmt.Sprintf("Id=lexfix-fresh.service\nLoadState=loaded\nActiveState=active\nMainPID=%d\n", fresh),
		"sshd.service":         "Id=sshd.service\nLoadState=loaded\nActiveState=active\nMainPID=1\n",
	})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir}), wordtest.WithSystemd(sd), wordtest.WithManifest(allowFixture))
	var res result
	w.Must(map[string]any{"units": []string{apttest.DaemonUnit, "lexfix-fresh.service", "sshd.service"}}, &res)
	if len(res.Restarted) != 1 || res.Restarted[0].Unit != apttest.DaemonUnit || res.Restarted[0].BeforePID != pid || res.Restarted[0].AfterPID == pid {
		t.Fatalf("restarted %+v", res.Restarted)
	}
	if got := strings.Join(sd.Actions(), ";"); got != "restart "+apttest.DaemonUnit {
		t.Fatalf("actions %q", got)
	}
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Unit] = s.Reason
	}
	if reasons["lexfix-fresh.service"] != "runs current code" || reasons["sshd.service"] != "not in this word's allow-list" {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	// The fake restarted nothing for real: the old process still runs the replaced library.
	if !slices.Equal(res.StillStale, []int{pid}) {
		t.Fatalf("still stale %v", res.StillStale)
	}
}

// Nothing on replaced code: nothing restarted. A restart systemd refuses fails the word with its state.
func TestNothingAndFailure(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	pid := r.StartDaemon(t)
	sd := wordtest.NewFakeSystemd(map[string]string{apttest.DaemonUnit: fmt.Sprintf("Id=%s\nLoadState=loaded\nActiveState=active\nMainPID=%d\n", apttest.DaemonUnit, pid)})
	load := func() *wordtest.Word {
		return wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir}), wordtest.WithSystemd(sd), wordtest.WithManifest(allowFixture))
	}
	var res result
	load().Must(map[string]any{"units": []string{apttest.DaemonUnit}}, &res)
	if len(res.Restarted) != 0 || len(sd.Actions()) != 0 {
		t.Fatalf("%+v %v", res, sd.Actions())
	}
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Lib+"=1.1")
	sd.FailNextRestart(apttest.DaemonUnit)
	out := load().Run(map[string]any{"units": []string{apttest.DaemonUnit}})
	if out.Code != "restart_services.failed" || out.Details["unit"] != apttest.DaemonUnit || out.Details["after_active_state"] == nil {
		t.Fatalf("%s %s %v", out.Code, out.Message, out.Details)
	}
	// Without a package manager the word cannot tell what runs replaced code, and changes nothing.
	if out := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(sd)).Run(nil); out.Code != errcode.CapabilityUnknown {
		t.Fatalf("%s", out.Code)
	}
}
