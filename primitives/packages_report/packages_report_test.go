package main_test

import (
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/packages_report.wasm"

type upgrade struct {
	Name, Installed, Candidate, Origin string
	Held                               bool
}

type report struct {
	Known   bool
	Unknown []string
	Backend string
	OS      struct {
		ID            string
		VersionID     string `json:"version_id"`
		Codename      string
		SupportEnd    string `json:"support_end"`
		ExtendedEnd   string `json:"extended_support_end"`
		SupportSource string `json:"support_source"`
		SupportEnded  *bool  `json:"support_ended"`
	}
	SecurityUpgrades []upgrade                                `json:"security_upgrades"`
	OtherUpgrades    []upgrade                                `json:"other_upgrades"`
	HalfConfigured   []struct{ Name, Version, Status string } `json:"half_configured"`
	Held             []struct{ Name, Version string }
	RestartMethod    string `json:"restart_method"`
	StaleProcesses   []struct {
		PID     int
		Command string
		Files   []string
	} `json:"stale_processes"`
	Reboot struct {
		Owed, Required bool
	}
	ListsRefreshed *string `json:"lists_refreshed"`
	PackageRun     *struct {
		PID     int
		Command string
	} `json:"package_run"`
	Summary struct {
		SecurityUpgrades int  `json:"security_upgrades"`
		OtherUpgrades    int  `json:"other_upgrades"`
		HalfConfigured   int  `json:"half_configured"`
		StaleProcesses   int  `json:"stale_processes"`
		RebootOwed       bool `json:"reboot_owed"`
	}
}

func load(t *testing.T, r *apttest.Root) *wordtest.Word {
	return wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir}))
}

// A Debian 12 machine with a security fix waiting for the library its running daemon links: the fix
// is reported with its origin, the held package's fix as held, the ordinary update apart; after the
// fix is installed the daemon is reported running the replaced library.
func TestReport(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	pid := r.StartDaemon(t)
	w := load(t, r)
	var rep report
	w.Must(nil, &rep)
	if !rep.Known || rep.Backend != "apt" || rep.OS.ID != "debian" || rep.OS.VersionID != "12" || rep.OS.Codename != "bookworm" {
		t.Fatalf("%+v", rep)
	}
	// Debian 12's standard support ended on 2026-06-10; its LTS runs to 2028-06-30.
	if rep.OS.SupportEnd != "2026-06-10" || rep.OS.ExtendedEnd != "2028-06-30" || rep.OS.SupportSource == "" || rep.OS.SupportEnded == nil {
		t.Fatalf("os %+v", rep.OS)
	}
	want := []upgrade{
		{Name: apttest.Held, Installed: "1.0", Candidate: "1.1", Origin: "Debian-Security:bookworm-security", Held: true},
		{Name: apttest.Lib, Installed: "1.0", Candidate: "1.1", Origin: "Debian-Security:bookworm-security"},
	}
	if !slices.Equal(rep.SecurityUpgrades, want) {
		t.Fatalf("security %+v", rep.SecurityUpgrades)
	}
	if len(rep.OtherUpgrades) != 1 || rep.OtherUpgrades[0].Name != apttest.Tool || rep.OtherUpgrades[0].Origin != "Debian:bookworm-updates" {
		t.Fatalf("other %+v", rep.OtherUpgrades)
	}
	if len(rep.Held) != 1 || rep.Held[0].Name != apttest.Held || len(rep.HalfConfigured) != 0 || len(rep.StaleProcesses) != 0 ||
		rep.RestartMethod != "proc" || rep.Reboot.Owed || rep.ListsRefreshed == nil || rep.PackageRun != nil {
		t.Fatalf("%+v", rep)
	}
	if rep.Summary.SecurityUpgrades != 2 || rep.Summary.OtherUpgrades != 1 {
		t.Fatalf("summary %+v", rep.Summary)
	}

	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Lib+"=1.1")
	w.Must(nil, &rep)
	if len(rep.StaleProcesses) != 1 || rep.StaleProcesses[0].PID != pid || rep.StaleProcesses[0].Command != "lexfix-daemon" || rep.Summary.StaleProcesses != 1 {
		t.Fatalf("stale %+v", rep.StaleProcesses)
	}
	if len(rep.SecurityUpgrades) != 1 || !rep.SecurityUpgrades[0].Held {
		t.Fatalf("security after the fix %+v", rep.SecurityUpgrades)
	}
}

// A package left half-configured by its failing postinst and a reboot asked for are reported.
func TestReportHalfDoneAndReboot(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
	if out, err := r.Command("/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.1").CombinedOutput(); err == nil {
		t.Fatalf("lexfix-broken 1.1 configured:\n%s", out)
	}
	r.WriteFile(t, "/run/reboot-required", nil)
	var rep report
	load(t, r).Must(nil, &rep)
	if len(rep.HalfConfigured) != 1 || rep.HalfConfigured[0].Name != apttest.Broken || rep.HalfConfigured[0].Status != "half-configured" {
		t.Fatalf("half %+v", rep.HalfConfigured)
	}
	if !rep.Reboot.Owed || !rep.Reboot.Required || !rep.Summary.RebootOwed {
		t.Fatalf("reboot %+v", rep.Reboot)
	}
}

// Another apt run in progress is reported; the report itself needs no lock.
func TestReportBesideARun(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.HoldLock(t)
	var rep report
	load(t, r).Must(nil, &rep)
	if rep.PackageRun == nil || rep.PackageRun.PID == 0 || rep.PackageRun.Command == "" || len(rep.SecurityUpgrades) < 2 {
		t.Fatalf("run %+v", rep.PackageRun)
	}
}

// A machine whose package manager the host does not know: the report completes and says so.
func TestReportUnknown(t *testing.T) {
	t.Parallel()
	var rep report
	wordtest.Load(t, wasmFile, "manifest.json").Must(nil, &rep)
	if rep.Known || !slices.Equal(rep.Unknown, []string{"packages", "restarts"}) {
		t.Fatalf("%+v", rep)
	}
}
