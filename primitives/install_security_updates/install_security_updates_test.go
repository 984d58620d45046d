package main_test

import (
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/install_security_updates.wasm"

type result struct {
	NothingToInstall bool     `json:"nothing_to_install"`
	RefreshFailed    string   `json:"refresh_failed"`
	Repaired         []string `json:"repaired"`
	Installed        []struct {
		Name, From, To, Origin string
	}
	HeldBack       []string `json:"held_back"`
	NeedRestart    []string `json:"need_restart"`
	StaleProcesses []struct {
		PID     int
		Command string
	} `json:"stale_processes"`
	RebootOwed    bool `json:"reboot_owed"`
	SecurityAfter int  `json:"security_upgrades_left"`
}

func load(t *testing.T, r *apttest.Root, opts ...wordtest.Option) *wordtest.Word {
	return wordtest.Load(t, wasmFile, "manifest.json", append(opts, wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir}))...)
}

// The library's security fix is installed, the held package's is not, nor the ordinary update; the
// daemon that links the library is reported running the replaced one. Run again, nothing is left.
func TestInstall(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	pid := r.StartDaemon(t)
	w := load(t, r)
	var res result
	w.Must(nil, &res)
	if res.NothingToInstall || len(res.Installed) != 1 || res.Installed[0].Name != apttest.Lib || res.Installed[0].From != "1.0" ||
		res.Installed[0].To != "1.1" || res.Installed[0].Origin != "Debian-Security:bookworm-security" {
		t.Fatalf("installed %+v", res.Installed)
	}
	if !slices.Equal(res.HeldBack, []string{apttest.Held}) || res.SecurityAfter != 0 || res.RebootOwed || len(res.Repaired) != 0 || res.RefreshFailed != "" {
		t.Fatalf("%+v", res)
	}
	if len(res.StaleProcesses) != 1 || res.StaleProcesses[0].PID != pid {
		t.Fatalf("stale %+v", res.StaleProcesses)
	}
	for p, want := range map[string]string{apttest.Lib: "1.1 installed", apttest.Held: "1.0 installed", apttest.Tool: "1.0 installed"} {
		if v := r.Version(t, p); v != want {
			t.Errorf("%s is %q, want %q", p, v, want)
		}
	}
	w.Must(nil, &res)
	if !res.NothingToInstall || len(res.Installed) != 0 {
		t.Fatalf("again: %+v", res)
	}
}

// A run left half done is finished first; then the fixes are installed.
func TestFinishesAHalfDoneRun(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
	if _, err := r.Command("/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.1").CombinedOutput(); err == nil {
		t.Fatal("lexfix-broken 1.1 configured without its file")
	}
	r.WriteFile(t, apttest.BrokenMayConfigure, nil)
	var res result
	load(t, r).Must(nil, &res)
	if !slices.Equal(res.Repaired, []string{apttest.Broken}) || len(res.Installed) != 1 || res.Installed[0].Name != apttest.Lib {
		t.Fatalf("%+v", res)
	}
	if v := r.Version(t, apttest.Broken); v != "1.1 installed" {
		t.Fatalf("lexfix-broken is %q", v)
	}
}

// A fix whose postinst fails fails the word with pkg.failed naming the package, which stays
// half-configured for the next run to finish.
func TestFailingPostinst(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
	res := load(t, r).Run(nil)
	if res.Code != errcode.PkgFailed || !slices.Contains(res.Details[errcode.DetailPackages].([]any), any(apttest.Broken)) {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	if v := r.Version(t, apttest.Broken); v != "1.1 half-configured" {
		t.Fatalf("lexfix-broken is %q", v)
	}
	// The same failure halts the next run at its first step, before anything new is installed.
	if res := load(t, r).Run(nil); res.Code != errcode.PkgFailed {
		t.Fatalf("again: %s %s", res.Code, res.Message)
	}
}

// Another apt run holding the lock: pkg.locked at once, nothing changed.
func TestLocked(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.HoldLock(t)
	res := load(t, r).Run(nil)
	if res.Code != errcode.PkgLocked || res.Details[errcode.DetailPID] == nil {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
}

// The node's policy takes security fixes only from Debian's own security host: the fixture's archive,
// which the manifest allows, is refused by the policy, with its code, and nothing is installed.
func TestPolicyRefusesTheOrigin(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	pol := manifest.NodePackages{Origins: []string{"origin=Debian,label=Debian-Security,site=security.debian.org"}}
	res := load(t, r, wordtest.WithPackagePolicy(pol)).Run(nil)
	if res.Code != errcode.PkgOriginRefused || res.Details[errcode.DetailReason] != "policy" || res.Details[errcode.DetailPackage] != apttest.Lib {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
	// A policy allowing no package names the word would touch: pkg.name_refused, nothing installed.
	res = load(t, r, wordtest.WithPackagePolicy(manifest.NodePackages{Names: []string{"openssl", "libssl*"}})).Run(nil)
	if res.Code != errcode.PkgNameRefused || res.Details[errcode.DetailReason] != "policy" {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
}

// Nothing waiting: the word passes and says so.
func TestNothingToInstall(t *testing.T) {
	t.Parallel()
	r := apttest.NewBareRoot(t)
	var res result
	load(t, r).Must(nil, &res)
	if !res.NothingToInstall || len(res.Installed) != 0 {
		t.Fatalf("%+v", res)
	}
}
