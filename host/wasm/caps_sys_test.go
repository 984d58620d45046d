package wasm_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func TestSys(t *testing.T) {
	h := newHost(t, cached(wasm.Config{}))
	p := newProber(t, h, "look", []map[string]any{{"cap": "sys.facts"}, {"cap": "sys.disk"}})
	var f capv1.Facts
	p.must(map[string]any{"cap": "sys.facts"}, &f)
	host, _ := os.Hostname()
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if f.Hostname != host || f.BootID != strings.TrimSpace(string(bootID)) || f.Kernel == "" || f.CPUs < 1 ||
		f.Memory.Total == 0 || len(f.Load) != 3 || f.UptimeS <= 0 {
		t.Fatalf("facts %+v", f)
	}
	var d capv1.SysDiskResult
	p.must(map[string]any{"cap": "sys.disk", "path": "/"}, &d)
	if len(d.Disks) != 1 || d.Disks[0].Total == 0 || d.Disks[0].Mount != "/" {
		t.Fatalf("disk %+v", d)
	}
	p.must(map[string]any{"cap": "sys.disk"}, &d)
	if len(d.Disks) == 0 {
		t.Fatal("no filesystems listed")
	}

	bounded := newProber(t, h, "look", []map[string]any{{"cap": "sys.disk", "paths": []string{"/var"}}})
	if code := bounded.one(map[string]any{"cap": "sys.disk", "path": "/etc"}, nil); code != errcode.CapabilityDenied {
		t.Fatalf("sys.disk outside its paths: %q", code)
	}
}

const nginxShow = `Id=nginx.service
Description=A high performance web server and a reverse proxy server
LoadState=loaded
ActiveState=failed
SubState=failed
Result=exit-code
ExecMainStatus=1
ExecMainCode=1
MainPID=0
NRestarts=3
ActiveEnterTimestamp=Mon 2026-11-30 09:12:01 UTC
`

func TestSystemd(t *testing.T) {
	fake := systemdtest.New(map[string]string{
		"nginx.service":    nginxShow,
		"postgres.service": "ActiveState=failed\nSubState=failed\nLoadState=loaded\nResult=exit-code\n",
		"sshd.service":     "ActiveState=active\nSubState=running\nLoadState=loaded\n",
	})
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	fake.SetJournal("nginx.service", []capv1.JournalEntry{
		{Time: now, Priority: 6, Message: "starting"},
		{Time: now.Add(time.Second), Priority: 3, Message: strings.Repeat("e", 200)},
		{Time: now.Add(2 * time.Second), Priority: 3, Message: "bind() to 0.0.0.0:80 failed"},
	})
	h := newHost(t, cached(wasm.Config{Systemd: fake}))
	p := newProber(t, h, "change", []map[string]any{
		{"cap": "systemd.unit", "units": []string{"nginx.service", "postgres*"}},
		{"cap": "systemd.restart", "units": []string{"nginx.service"}},
		{"cap": "systemd.reset_failed", "units": []string{"nginx.service"}},
		{"cap": "journal.read", "units": []string{"nginx.service"}, "max_bytes": 200},
	})
	var u capv1.Unit
	p.must(map[string]any{"cap": "systemd.unit", "unit": "nginx.service"}, &u)
	want := capv1.Unit{Name: "nginx.service", Description: "A high performance web server and a reverse proxy server",
		LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainStatus: 1,
		ExecMainCode: "exited", NRestarts: 3, ActiveEnter: "Mon 2026-11-30 09:12:01 UTC"}
	if u != want {
		t.Fatalf("unit %+v\nwant %+v", u, want)
	}
	var failed capv1.FailedUnits
	p.must(map[string]any{"cap": "systemd.unit", "failed": true}, &failed)
	if strings.Join(failed.Units, ",") != "nginx.service,postgres.service" {
		t.Fatalf("failed units %v", failed.Units)
	}
	var j capv1.JournalResult
	p.must(map[string]any{"cap": "journal.read", "unit": "nginx.service", "lines": 10}, &j)
	if len(j.Entries) != 1 || !j.Truncated || j.Entries[0].Message != "bind() to 0.0.0.0:80 failed" {
		t.Fatalf("journal %+v", j)
	}
	for _, tc := range []struct {
		req  map[string]any
		code string
	}{
		{map[string]any{"cap": "systemd.unit", "unit": "sshd.service"}, errcode.CapabilityDenied},
		{map[string]any{"cap": "systemd.unit", "unit": "--help"}, errcode.CapabilityInvalid},
		{map[string]any{"cap": "systemd.restart", "unit": "postgres.service"}, errcode.CapabilityDenied},
		{map[string]any{"cap": "journal.read", "unit": "sshd.service"}, errcode.CapabilityDenied},
	} {
		if code := p.one(tc.req, nil); code != tc.code {
			t.Fatalf("%v: %q, want %q", tc.req, code, tc.code)
		}
	}
	p.must(map[string]any{"cap": "systemd.reset_failed", "unit": "nginx.service"}, nil)
	p.must(map[string]any{"cap": "systemd.restart", "unit": "nginx.service"}, nil)
	if got := strings.Join(fake.Actions(), ";"); got != "reset-failed nginx.service;restart nginx.service" {
		t.Fatalf("actions %q", got)
	}
	p.must(map[string]any{"cap": "systemd.unit", "unit": "nginx.service"}, &u)
	if u.ActiveState != "active" || u.SubState != "running" {
		t.Fatalf("after restart %+v", u)
	}
	fake.FailNextRestart("nginx.service")
	if code := p.one(map[string]any{"cap": "systemd.restart", "unit": "nginx.service"}, nil); code != errcode.CapabilityFailed {
		t.Fatalf("failing restart: %q", code)
	}
}

func TestSystemdUnavailableAnswersUnknown(t *testing.T) {
	h := newHost(t, cached(wasm.Config{Systemd: systemd.Unavailable{Reason: "systemd is not running on this machine"}}))
	p := newProber(t, h, "look", []map[string]any{
		{"cap": "systemd.unit", "units": []string{"*"}},
		{"cap": "journal.read", "units": []string{"*"}},
	})
	for _, req := range []map[string]any{
		{"cap": "systemd.unit", "unit": "nginx.service"},
		{"cap": "systemd.unit", "failed": true},
		{"cap": "journal.read", "unit": "nginx.service"},
	} {
		if code := p.one(req, nil); code != errcode.CapabilityUnknown {
			t.Fatalf("%v: %q, want capability.unknown", req, code)
		}
	}
}

// TestDetectInThisContainer: this machine runs no systemd, and the detected manager says so.
func TestDetectWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here")
	}
	if _, ok := systemd.Detect().(systemd.Unavailable); !ok {
		t.Fatal("Detect returned a manager on a machine without systemd")
	}
}
