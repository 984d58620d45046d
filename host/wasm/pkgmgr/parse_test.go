package pkgmgr_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Real outputs, as apt 2.6, dpkg 1.21 and needrestart 3.6 on Debian 12 print them.
const (
	sourcesOut = `Package files:
 100 /var/lib/dpkg/status
     release a=now
 500 http://10.213.0.1:8080 bookworm-updates/main amd64 Packages
     release o=Debian,a=bookworm-updates,n=bookworm-updates,l=Debian,c=main,b=amd64
     origin 10.213.0.1
 500 http://10.213.0.1:8080 bookworm-security/main amd64 Packages
     release o=Debian,a=bookworm-security,n=bookworm-security,l=Debian-Security,c=main,b=amd64
     origin 10.213.0.1
 500 http://deb.debian.org/debian bookworm/main amd64 Packages
     release v=12.8,o=Debian,a=oldstable,n=bookworm,l=Debian,c=main,b=amd64
     origin deb.debian.org
Pinned packages:
`
	policyOut = `liblexfix1:
  Installed: 1.0
  Candidate: 1.1
  Version table:
     1.1 500
        500 http://10.213.0.1:8080 bookworm-security/main amd64 Packages
 *** 1.0 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
libc6:i386:
  Installed: (none)
  Candidate: 2.36-9+deb12u9
  Version table:
     2.36-9+deb12u9 500 (phased 20%)
        500 http://deb.debian.org/debian bookworm/main i386 Packages
`
	simulationOut = `NOTE: This is only a simulation!
      apt-get needs root privileges for real execution.
Reading package lists...
The following packages will be upgraded:
  liblexfix1
Inst liblexfix1 [1.0] (1.1 Debian-Security:bookworm-security [amd64])
Inst libnew2 (2.0 Debian:12.8/oldstable, Debian:bookworm-updates [amd64])
Inst libc6:i386 [2.36-9] (2.36-9+deb12u9 Debian:12.8/oldstable [i386]) []
Remv oldthing [0.9]
Conf liblexfix1 (1.1 Debian-Security:bookworm-security [amd64])
`
	needrestartOut = `NEEDRESTART-VER: 3.6
NEEDRESTART-KCUR: 6.1.0-13-amd64
NEEDRESTART-KEXP: 6.1.0-18-amd64
NEEDRESTART-KSTA: 3
Use of uninitialized value in hex at /usr/share/perl5/NeedRestart/uCode/AMD.pm line 175.
NEEDRESTART-UCSTA: 1
NEEDRESTART-SVC: nginx.service
NEEDRESTART-SVC: mosquitto
NEEDRESTART-SVC: bad name!
NEEDRESTART-CONT: LXC web1
`
	statusOut = `Package: liblexfix1
Status: install ok installed
Architecture: amd64
Version: 1.0
Description: a library
 with a long description
 .
 Version: not this one

Package: lexfix-broken
Status: install reinstreq half-configured
Architecture: amd64
Version: 1.1

Package: gone
Status: deinstall ok config-files
Architecture: all
Version: 3

Package: lexfix-held
Status: hold ok installed
Architecture: amd64
Version: 1.0
`
)

func TestParseSourcesAndPolicy(t *testing.T) {
	files := pkgmgr.ParseSources([]byte(sourcesOut))
	sec := files["http://10.213.0.1:8080 bookworm-security/main amd64 Packages"]
	if sec.Origin != "Debian" || sec.Label != "Debian-Security" || sec.Suite != "bookworm-security" || sec.Codename != "bookworm-security" ||
		sec.Component != "main" || sec.Site != "10.213.0.1" || !pkgmgr.IsSecurity(sec) {
		t.Fatalf("%+v", sec)
	}
	if main := files["http://deb.debian.org/debian bookworm/main amd64 Packages"]; main.Suite != "oldstable" || pkgmgr.IsSecurity(main) {
		t.Fatalf("%+v", main)
	}
	if st := files["/var/lib/dpkg/status"]; st.Suite != "now" {
		t.Fatalf("status: %+v", st)
	}
	tables := pkgmgr.ParsePolicy([]byte(policyOut))
	if len(tables) != 2 {
		t.Fatalf("%+v", tables)
	}
	lib := tables[0]
	if lib.Name != "liblexfix1" || lib.Installed != "1.0" || lib.Candidate != "1.1" || len(lib.Versions) != 2 ||
		lib.Versions[0].Version != "1.1" || lib.Versions[0].Installed || !lib.Versions[1].Installed ||
		!slices.Equal(lib.Versions[0].Files, []string{"http://10.213.0.1:8080 bookworm-security/main amd64 Packages"}) || len(lib.Versions[1].Files) != 2 {
		t.Fatalf("%+v", lib)
	}
	if c := tables[1]; c.Name != "libc6:i386" || c.Installed != "" || len(c.Versions) != 1 || c.Versions[0].Version != "2.36-9+deb12u9" {
		t.Fatalf("%+v", c)
	}
}

func TestIsSecurity(t *testing.T) {
	for o, want := range map[capv1.Origin]bool{
		{Suite: "bookworm-security"}: true, {Codename: "jammy-security"}: true, {Suite: "stretch/updates"}: true,
		{Label: "Debian-Security"}: true, {Suite: "bookworm-updates"}: false, {Label: "Debian", Suite: "stable"}: false, {}: false,
	} {
		if pkgmgr.IsSecurity(o) != want {
			t.Errorf("%+v: %v", o, !want)
		}
	}
}

func TestParseSimulation(t *testing.T) {
	steps := pkgmgr.ParseSimulation([]byte(simulationOut))
	want := []pkgmgr.Step{
		{Name: "liblexfix1", Arch: "amd64", From: "1.0", To: "1.1"},
		{Name: "libnew2", Arch: "amd64", To: "2.0"},
		{Name: "libc6", Arch: "i386", From: "2.36-9", To: "2.36-9+deb12u9"},
		{Remove: true, Name: "oldthing", From: "0.9"},
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("%+v", steps)
	}
}

func TestParseNeedrestart(t *testing.T) {
	n := pkgmgr.ParseNeedrestart([]byte(needrestartOut))
	if n.Version != "3.6" || n.KernelCurrent != "6.1.0-13-amd64" || n.KernelExpected != "6.1.0-18-amd64" || n.KernelStatus != 3 ||
		!slices.Equal(n.Services, []string{"nginx.service", "mosquitto.service"}) {
		t.Fatalf("%+v", n)
	}
}

func TestParseStatus(t *testing.T) {
	recs := pkgmgr.ParseStatus([]byte(statusOut))
	if len(recs) != 4 {
		t.Fatalf("%+v", recs)
	}
	if r := recs[0]; r.Name != "liblexfix1" || r.Version != "1.0" || r.State != "installed" || !r.Present() || r.HalfDone() {
		t.Fatalf("%+v", r)
	}
	if r := recs[1]; r.State != "half-configured" || !r.HalfDone() || !r.Present() {
		t.Fatalf("%+v", r)
	}
	if r := recs[2]; r.Present() {
		t.Fatalf("config-files only is present: %+v", r)
	}
	if r := recs[3]; r.Want != "hold" {
		t.Fatalf("%+v", r)
	}
}

func TestReplacedFilesAndProcFiles(t *testing.T) {
	maps := `55d0c8a00000-55d0c8a01000 r--p 00000000 00:27 10284530                   /tmp/t/root/usr/sbin/lexfix-daemon
7f9864311000-7f9864316000 r-xp 00002000 00:27 10284530                   /tmp/t/root/usr/lib/x86_64-linux-gnu/liblexfix.so.1 (deleted)
7f9864311000-7f9864316000 r--p 00002000 00:27 10284530                   /tmp/t/root/usr/lib/x86_64-linux-gnu/liblexfix.so.1 (deleted)
7f9864400000-7f9864401000 rw-s 00000000 00:01 1234                       /memfd:wazero (deleted)
7f9864500000-7f9864501000 rw-s 00000000 00:01 1234                       /tmp/t/root/tmp/cache file (deleted)
7f9864600000-7f9864601000 r-xp 00000000 00:01 1234                       /tmp/elsewhere/usr/lib/x.so (deleted)
7ffd0000000-7ffd0001000 rw-p 00000000 00:00 0                            [stack]
`
	got := pkgmgr.ReplacedFiles([]byte(maps), "/tmp/t/root/usr/sbin/lexfix-daemon", "/tmp/t/root")
	if !slices.Equal(got, []string{"/usr/lib/x86_64-linux-gnu/liblexfix.so.1"}) {
		t.Fatalf("%q", got)
	}
	if got := pkgmgr.ReplacedFiles(nil, "/usr/sbin/nginx (deleted)", "/"); !slices.Equal(got, []string{"/usr/sbin/nginx"}) {
		t.Fatalf("exe: %q", got)
	}
	if u := pkgmgr.UnitOf([]byte("0::/system.slice/nginx.service\n")); u != "nginx.service" {
		t.Fatalf("%q", u)
	}
	if u := pkgmgr.UnitOf([]byte("12:pids:/\n1:name=systemd:/system.slice/cron.service\n")); u != "cron.service" {
		t.Fatalf("%q", u)
	}
	if u := pkgmgr.UnitOf([]byte("0::/user.slice/user-0.slice/session-3.scope\n")); u != "" {
		t.Fatalf("%q", u)
	}
	if c, ppid, ok := pkgmgr.ParseStat([]byte("42 (a (weird) name) S 7 42 42 0 -1")); !ok || c != "a (weird) name" || ppid != 7 {
		t.Fatalf("%q %d %v", c, ppid, ok)
	}
}

func TestCompareVersions(t *testing.T) {
	order := []string{"~~", "~~a", "~", "0", "0.9", "1.0~rc1", "1.0", "1.0-1", "1.0-1+deb12u1", "1.0a", "1.0+b1", "1.1", "1.10", "2:0.1"}
	for i := range order {
		for j := range order {
			got := pkgmgr.CompareVersions(order[i], order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if sign(got) != want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if pkgmgr.CompareVersions("6.1.0-18-amd64", "6.1.0-13-amd64") <= 0 || pkgmgr.CompareVersions("1.01", "1.1") != 0 {
		t.Error("kernel releases or leading zeros")
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(statusOut))
	f.Add([]byte("Package: a\nStatus: x y\n\n\n Package: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range pkgmgr.ParseStatus(data) {
			if r.Name == "" {
				t.Fatal("a record without a name")
			}
			if r.HalfDone() && !r.Present() {
				t.Fatalf("half done but not present: %+v", r)
			}
		}
	})
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(policyOut), []byte(sourcesOut))
	f.Fuzz(func(t *testing.T, policy, sources []byte) {
		files := pkgmgr.ParseSources(sources)
		for _, p := range pkgmgr.ParsePolicy(policy) {
			if p.Name == "" || strings.ContainsAny(p.Name, " \t\n") {
				t.Fatalf("name %q", p.Name)
			}
			for _, v := range p.Versions {
				if v.Version == "" {
					t.Fatal("a version without a version")
				}
				for _, f := range v.Files {
					_ = files[f]
				}
			}
		}
	})
}

func FuzzParseSimulation(f *testing.F) {
	f.Add([]byte(simulationOut))
	f.Add([]byte("Inst a [\nInst b (\nRemv\nInst c [1] (2 [x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range pkgmgr.ParseSimulation(data) {
			if s.Name == "" || (!s.Remove && s.To == "") {
				t.Fatalf("%+v", s)
			}
		}
	})
}

func FuzzParseNeedrestart(f *testing.F) {
	f.Add([]byte(needrestartOut))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range pkgmgr.ParseNeedrestart(data).Services {
			if s == "" || strings.ContainsAny(s, " /\n") {
				t.Fatalf("service %q", s)
			}
		}
	})
}

func FuzzProcFiles(f *testing.F) {
	f.Add([]byte("1-2 r-xp 0 00:01 1 /usr/lib/x.so (deleted)\n"), "/usr/bin/x (deleted)", []byte("0::/system.slice/a.service"), []byte("1 (x) S 0"))
	f.Fuzz(func(t *testing.T, maps []byte, exe string, cgroup, stat []byte) {
		for _, p := range pkgmgr.ReplacedFiles(maps, exe, "/") {
			if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
				t.Fatalf("file %q", p)
			}
		}
		if u := pkgmgr.UnitOf(cgroup); u != "" && !strings.HasSuffix(u, ".service") {
			t.Fatalf("unit %q", u)
		}
		pkgmgr.ParseStat(stat)
	})
}

func FuzzCompareVersions(f *testing.F) {
	f.Add("1.0-1", "1:0.9~rc1+b2")
	f.Fuzz(func(t *testing.T, a, b string) {
		if x, y := pkgmgr.CompareVersions(a, b), pkgmgr.CompareVersions(b, a); sign(x) != -sign(y) {
			t.Fatalf("not antisymmetric: %q %q: %d %d", a, b, x, y)
		}
		if pkgmgr.CompareVersions(a, a) != 0 {
			t.Fatalf("%q is not equal to itself", a)
		}
	})
}

// The comparison agrees with dpkg's own on every pair of a varied set.
func TestCompareVersionsAgainstDpkg(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg here")
	}
	vs := []string{"0", "1", "1.0", "1.0-1", "1.0-1~bpo12+1", "1.0+dfsg-2", "1.0.1", "1:0.5", "2.36-9+deb12u9", "2.36-9+deb12u10",
		"6.1.0-18-amd64", "6.1.0-9-amd64", "1.2a", "1.2+", "1.2~", "3.0-0ubuntu1", "3.0-0ubuntu1.1", "10", "9.99"}
	for _, a := range vs {
		for _, b := range vs {
			err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run()
			dpkgLess := err == nil
			if ours := pkgmgr.CompareVersions(a, b) < 0; ours != dpkgLess {
				t.Errorf("%q < %q: dpkg %v, ours %v", a, b, dpkgLess, ours)
			}
		}
	}
}
