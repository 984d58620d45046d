package wasm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// The converge word on a machine (machine_test.go): real users, files, sysctl and nftables.

func convergeModule(t *testing.T) (string, string) {
	t.Helper()
	mod, err := filepath.Abs("../../build/wasm/converge.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mod); err != nil {
		t.Fatalf("%s is missing: run `make wasm` first", mod)
	}
	man, err := filepath.Abs("../../primitives/converge/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	return mod, man
}

type convergeOut struct {
	Result  string `json:"result"`
	Fetched int    `json:"fetched"`
	Items   []struct {
		ID      string   `json:"id"`
		Status  string   `json:"status"`
		Changes []string `json:"changes"`
		Code    string   `json:"code"`
		Message string   `json:"message"`
	} `json:"items"`
	Pending []json.RawMessage `json:"pending"`
}

func decodeOut(t *testing.T, r *childRun) convergeOut {
	t.Helper()
	res := r.res.Result
	if res == nil {
		t.Fatalf("the child reported no result:\n%s", r.output.String())
	}
	var out convergeOut
	if len(res.Output) > 0 {
		if err := json.Unmarshal(res.Output, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (o convergeOut) statuses() string {
	var s []string
	for _, it := range o.Items {
		s = append(s, it.ID+"="+it.Status)
	}
	return strings.Join(s, " ")
}

const (
	unitStopped = "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=disabled\n"
	unitRunning = "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nMainPID=4242\n"
	sshKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl web@lexicon.test"
)

// webRole is what a web server carries: an operators' group, a user in it with an SSH key, its
// config (the user's, mode 0640) and a page, IP forwarding on, port 80 open, and its unit.
func webRole(conf, page []byte) (*footprint.Footprint, map[string][]byte) {
	fp := &footprint.Footprint{
		Schema: footprint.SchemaName,
		Groups: []footprint.Group{{Name: "webops", State: "present"}},
		Users:  []footprint.User{{Name: "web", State: "present", Shell: "/bin/bash", Groups: []string{"webops"}, SSHKeys: []string{sshKey}}},
		Files: []footprint.File{
			{Path: "/etc/web/web.conf", SHA256: cas.Sum(conf), Size: int64(len(conf)), Mode: "0640", Owner: "web", Group: "webops"},
			{Path: "/srv/www/index.html", SHA256: cas.Sum(page), Size: int64(len(page)), Mode: "0644", Owner: "root", Group: "root"},
		},
		Sysctl:   []footprint.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}},
		Firewall: &footprint.Firewall{State: "present", Inbound: []footprint.Rule{{Protocol: "tcp", Port: 80}}},
		Units:    []footprint.Unit{{Name: "web.service", Enabled: true, Started: true, Files: []string{"/etc/web/web.conf"}}},
	}
	return fp, map[string][]byte{cas.Sum(conf): conf, cas.Sum(page): page}
}

var webBounds = footprint.Bounds{Paths: []string{"/etc/web", "/srv/www"}, Users: []string{"web"}, Groups: []string{"webops"},
	Sysctl: []string{"net.ipv4.*"}, Units: []string{"web.service"}, Firewall: true}

func applyParams(t *testing.T, fp *footprint.Footprint) json.RawMessage {
	return mustJSON(t, map[string]any{"mode": "apply", "footprint": fp})
}

// TestMachineConverge converges the web role on a machine: the user exists with its key and group, the
// files are the user's with their modes, IP forwarding is on in the namespace and persisted, nft lists
// Lexicon's table beside the table that was there before, port 80 answers from outside while 8080 is
// refused; and a second converge changes nothing and fetches nothing.
func TestMachineConverge(t *testing.T) {
	m := newMachine(t)
	mod, man := convergeModule(t)
	// A table of the machine's own, which converge must leave alone.
	m.inNS("nft", "add table ip theirs")
	m.inNS("nft", "add chain ip theirs input { type filter hook input priority 10; policy accept; }")
	fp, blobs := webRole([]byte("listen 80;\n"), []byte("<h1>web</h1>\n"))
	j := job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: webBounds, Blobs: blobs,
		Units: map[string]string{"web.service": unitStopped}, Listen: []int{80, 8080}, Serve: true}
	r := m.start(j)
	out := decodeOut(t, r)
	if r.res.Result.Outcome != wasm.Completed || out.Result != "converged" {
		r.stop(t)
		t.Fatalf("%s %s %s: %s", r.res.Result.Outcome, r.res.Result.Code, r.res.Result.Message, out.statuses())
	}
	want := "group:webops=changed user:web=changed file:/etc/web/web.conf=changed file:/srv/www/index.html=changed " +
		"sysctl:net.ipv4.ip_forward=changed firewall=changed unit:web.service=changed"
	if out.statuses() != want || out.Fetched != 2 {
		r.stop(t)
		t.Fatalf("%s, fetched %d", out.statuses(), out.Fetched)
	}

	// The firewall, from outside the node.
	c, err := net.DialTimeout("tcp", net.JoinHostPort(m.nodeIP, "80"), 10*time.Second)
	if err != nil {
		r.stop(t)
		t.Fatalf("the open port does not answer: %v", err)
	}
	hello, _ := io.ReadAll(c)
	c.Close()
	if string(hello) != "hello\n" {
		t.Fatalf("port 80 said %q", hello)
	}
	_, err = net.DialTimeout("tcp", net.JoinHostPort(m.nodeIP, "8080"), 10*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the closed port (served, but not opened) must be refused by the firewall's reset: %v", err)
	}
	ruleset := m.inNS("nft", "list", "ruleset")
	for _, s := range []string{"table inet lexicon {", "tcp dport 80 accept", "meta l4proto tcp reject with tcp reset", "table ip theirs {"} {
		if !strings.Contains(ruleset, s) {
			t.Errorf("nft list ruleset has no %q:\n%s", s, ruleset)
		}
	}
	if v := strings.TrimSpace(m.inNS("cat", "/proc/sys/net/ipv4/ip_forward")); v != "1" {
		t.Errorf("ip_forward is %s in the node's namespace", v)
	}
	r.stop(t)

	// The disk.
	passwd, _ := m.file("/etc/passwd")
	uid := -1
	for line := range strings.SplitSeq(passwd, "\n") {
		if f := strings.Split(line, ":"); len(f) == 7 && f[0] == "web" {
			uid, _ = strconv.Atoi(f[2])
			if f[6] != "/bin/bash" {
				t.Errorf("web's shell is %s", f[6])
			}
		}
	}
	if uid <= 0 {
		t.Fatalf("no user web in the machine's /etc/passwd:\n%s", passwd)
	}
	if group, _ := m.file("/etc/group"); !strings.Contains(group, "\nwebops:x:") || !regexpMember(group, "webops", "web") {
		t.Errorf("web is not in webops:\n%s", group)
	}
	if keys, _ := m.file("/home/web/.ssh/authorized_keys"); keys != sshKey+"\n" {
		t.Errorf("authorized_keys %q", keys)
	}
	if conf, _ := m.file("/etc/web/web.conf"); conf != "listen 80;\n" {
		t.Errorf("web.conf %q", conf)
	}
	fi, err := m.stat("/etc/web/web.conf")
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o640 || int(st.Uid) != uid {
		t.Errorf("web.conf is %v, uid %d (web is %d)", fi.Mode(), st.Uid, uid)
	}
	if persisted, _ := m.file("/etc/sysctl.d/90-lexicon.conf"); !strings.Contains(persisted, "net.ipv4.ip_forward = 1\n") {
		t.Errorf("sysctl not persisted: %q", persisted)
	}
	if _, ok := m.file("/etc/lexicon-agent/policy.json"); ok {
		t.Error("the agent's folder was written")
	}

	// Again: nothing differs, nothing is fetched, nothing is done.
	j.Units, j.Listen, j.Serve = map[string]string{"web.service": unitRunning}, nil, false
	r = m.run(j)
	out = decodeOut(t, r)
	if out.Result != "converged" || strings.Contains(out.statuses(), "=changed") || out.Fetched != 0 || len(r.res.Served) != 0 || len(r.res.Actions) != 0 {
		t.Fatalf("second converge: %s, fetched %d, served %v, systemd %v\n%+v", out.statuses(), out.Fetched, r.res.Served, r.res.Actions, out.Items)
	}
}

// TestMachineDrift: after a converge, the firewall changed by hand (a rule added to Lexicon's table)
// and the user's shell changed behind converge's back are drift the recipe names, item by item.
func TestMachineDrift(t *testing.T) {
	m := newMachine(t)
	mod, man := convergeModule(t)
	fp, blobs := webRole([]byte("listen 80;\n"), []byte("<h1>web</h1>\n"))
	r := m.run(job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: webBounds, Blobs: blobs,
		Units: map[string]string{"web.service": unitStopped}})
	if out := decodeOut(t, r); out.Result != "converged" {
		t.Fatalf("%s", out.statuses())
	}
	check, _ := filepath.Abs("../../build/wasm/recipes/footprint_drift.wasm")
	checkMan, _ := filepath.Abs("../../primitives/recipes/footprint_drift/manifest.json")
	drift := job{Module: check, Manifest: checkMan, Params: []byte(`{}`), Units: map[string]string{"web.service": unitRunning}}
	verdict := func() (v struct{ Verdict, Detail string }) {
		t.Helper()
		r := m.run(drift)
		if r.res.Result == nil || r.res.Result.Outcome != wasm.Completed {
			t.Fatalf("check: %+v\n%s", r.res.Result, r.output.String())
		}
		if err := json.Unmarshal(r.res.Result.Output, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := verdict(); v.Verdict != "pass" {
		t.Fatalf("drift right after a converge: %+v", v)
	}
	m.inNS("nft", "add", "rule", "inet", "lexicon", "input", "tcp", "dport", "9999", "accept")
	passwd, _ := m.file("/etc/passwd")
	var lines []string
	for line := range strings.SplitSeq(passwd, "\n") {
		if strings.HasPrefix(line, "web:") {
			line = strings.TrimSuffix(line, "/bin/bash") + "/bin/sh"
		}
		lines = append(lines, line)
	}
	if err := os.WriteFile(filepath.Join(m.upper, "etc/passwd"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	v := verdict()
	if v.Verdict != "fail" || !strings.Contains(v.Detail, "user:web (shell /bin/sh, not /bin/bash)") || !strings.Contains(v.Detail, "firewall (changed outside Lexicon)") {
		t.Fatalf("%+v", v)
	}
}

// TestMachineUsersChange: a second footprint changes a user's shell, takes it out of a group and its
// keys away (usermod, authorized_keys emptied), and removes a user and a group it no longer wants
// (userdel, groupdel, which also ends the user's membership of that group).
func TestMachineUsersChange(t *testing.T) {
	m := newMachine(t)
	mod, man := convergeModule(t)
	bounds := footprint.Bounds{Users: []string{"web", "old"}, Groups: []string{"webops", "legacy", "extra"}}
	first := &footprint.Footprint{Schema: footprint.SchemaName,
		Groups: []footprint.Group{{Name: "webops", State: "present"}, {Name: "legacy", State: "present"}, {Name: "extra", State: "present"}},
		Users: []footprint.User{{Name: "web", State: "present", Shell: "/bin/bash", Groups: []string{"webops", "legacy", "extra"}, SSHKeys: []string{sshKey}},
			{Name: "old", State: "present"}}}
	r := m.run(job{Module: mod, Manifest: man, Params: applyParams(t, first), Bounds: bounds})
	if out := decodeOut(t, r); out.Result != "converged" {
		t.Fatalf("%s %s: %s", r.res.Result.Code, r.res.Result.Message, out.statuses())
	}
	second := &footprint.Footprint{Schema: footprint.SchemaName,
		Groups: []footprint.Group{{Name: "webops", State: "present"}, {Name: "legacy", State: "absent"}, {Name: "extra", State: "present"}},
		Users: []footprint.User{{Name: "web", State: "present", Shell: "/bin/sh", Groups: []string{"webops"}, SSHKeys: []string{}},
			{Name: "old", State: "absent"}}}
	r = m.run(job{Module: mod, Manifest: man, Params: applyParams(t, second), Bounds: bounds})
	out := decodeOut(t, r)
	if out.Result != "converged" {
		t.Fatalf("%s %s: %s", r.res.Result.Code, r.res.Result.Message, out.statuses())
	}
	for _, it := range out.Items {
		if it.ID == "user:web" && strings.Join(it.Changes, ",") != "shell,groups,ssh_keys" {
			t.Errorf("web changed %v", it.Changes)
		}
	}
	passwd, _ := m.file("/etc/passwd")
	group, _ := m.file("/etc/group")
	if strings.Contains(passwd, "\nold:") || strings.Contains(group, "\nlegacy:") {
		t.Fatal("old or legacy is still there")
	}
	if !strings.Contains(passwd, ":/bin/sh\n") || regexpMember(group, "extra", "web") || !regexpMember(group, "webops", "web") {
		t.Fatalf("web not changed:\n%s\n%s", passwd, group)
	}
	if keys, ok := m.file("/home/web/.ssh/authorized_keys"); !ok || keys != "" {
		t.Fatalf("keys left: %q", keys)
	}
}

// dpkgState returns a package's version and state as the machine's dpkg database holds it ("" when
// it holds none).
func (m *machine) dpkgState(name string) string {
	m.t.Helper()
	status, ok := m.file("/var/lib/dpkg/status")
	if !ok {
		m.t.Fatal("the machine has no dpkg database")
	}
	for para := range strings.SplitSeq(status, "\n\n") {
		var pkg, version, state string
		for line := range strings.SplitSeq(para, "\n") {
			switch k, v, _ := strings.Cut(line, ": "); k {
			case "Package":
				pkg = v
			case "Version":
				version = v
			case "Status":
				f := strings.Fields(v)
				state = f[len(f)-1]
			}
		}
		if pkg == name && state != "not-installed" {
			return version + " " + state
		}
	}
	return ""
}

var packageBounds = footprint.Bounds{Packages: []string{"liblexfix*", "lexfix-*"}, Paths: []string{"/etc/lexfix"}}

// TestMachinePackages: package items go through pkg.ensure to the machine's real apt and dpkg, from the
// fixture repository: one installed, one brought to a declared version, one removed, one already as
// declared, one held by the machine's admin, which fails alone; the drift recipe then names the held
// one; a second converge changes no package.
func TestMachinePackages(t *testing.T) {
	m := newPackageMachine(t)
	mod, man := convergeModule(t)
	fp := &footprint.Footprint{Schema: footprint.SchemaName, Packages: []footprint.Package{
		{Name: apttest.Lib, State: "present"}, {Name: apttest.Tool, State: "present", Version: "1.1"}, {Name: apttest.Extra, State: "present"},
		{Name: apttest.Daemon, State: "absent"}, {Name: apttest.Held, State: "present", Version: "1.1"}}}
	r := m.run(job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: packageBounds})
	out := decodeOut(t, r)
	if r.res.Result.Code != errcode.FootprintItemsFailed ||
		out.statuses() != "package:liblexfix1=unchanged package:lexfix-tool=changed package:lexfix-extra=changed package:lexfix-daemon=changed package:lexfix-held=failed" {
		t.Fatalf("%s %s: %s", r.res.Result.Code, r.res.Result.Message, out.statuses())
	}
	for p, want := range map[string]string{apttest.Lib: "1.0 installed", apttest.Tool: "1.1 installed", apttest.Extra: "1.0 installed", apttest.Daemon: "", apttest.Held: "1.0 installed"} {
		if got := m.dpkgState(p); got != want {
			t.Fatalf("%s is %q, want %q", p, got, want)
		}
	}
	check, _ := filepath.Abs("../../build/wasm/recipes/footprint_drift.wasm")
	checkMan, _ := filepath.Abs("../../primitives/recipes/footprint_drift/manifest.json")
	r = m.run(job{Module: check, Manifest: checkMan, Params: []byte(`{}`)})
	var v struct{ Verdict, Detail string }
	if err := json.Unmarshal(r.res.Result.Output, &v); err != nil {
		t.Fatalf("%v: %+v", err, r.res.Result)
	}
	if v.Verdict != "fail" || v.Detail != "drift: package:lexfix-held (version 1.0, not 1.1)" {
		t.Fatalf("%+v", v)
	}
	fp.Packages = fp.Packages[:4]
	out = decodeOut(t, m.run(job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: packageBounds}))
	if out.Result != "converged" || strings.Contains(out.statuses(), "=changed") {
		t.Fatal(out.statuses())
	}
}

// TestMachinePackageKilled kills a converge right after its packages are installed, before the word
// hears back: the package is installed whole (dpkg finished), and the next converge finds it as
// declared, writes the file that came after it and records the footprint.
func TestMachinePackageKilled(t *testing.T) {
	m := newPackageMachine(t)
	mod, man := convergeModule(t)
	conf := []byte("tool = 1.1\n")
	fp := &footprint.Footprint{Schema: footprint.SchemaName,
		Packages: []footprint.Package{{Name: apttest.Tool, State: "present", Version: "1.1"}, {Name: apttest.Extra, State: "present"}},
		Files:    []footprint.File{{Path: "/etc/lexfix/tool.conf", SHA256: cas.Sum(conf), Size: int64(len(conf)), Mode: "0644", Owner: "root", Group: "root"}}}
	base := job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: packageBounds, Blobs: map[string][]byte{cas.Sum(conf): conf}}
	killed := base
	killed.Fault = "pkg.ensure.done"
	if r := m.run(killed); r.died != killed.Fault {
		t.Fatalf("the converge did not die at %s:\n%s", killed.Fault, r.output.String())
	}
	if tool, extra := m.dpkgState(apttest.Tool), m.dpkgState(apttest.Extra); tool != "1.1 installed" || extra != "1.0 installed" {
		t.Fatalf("killed after the install: lexfix-tool %q, lexfix-extra %q", tool, extra)
	}
	if _, ok := m.file("/etc/lexfix/tool.conf"); ok {
		t.Fatal("the file after the packages was written before the kill")
	}
	r := m.run(base)
	out := decodeOut(t, r)
	if r.res.Result.Outcome != wasm.Completed || out.statuses() != "package:lexfix-tool=unchanged package:lexfix-extra=unchanged file:/etc/lexfix/tool.conf=changed" {
		t.Fatalf("the next converge: %s %s: %s", r.res.Result.Code, r.res.Result.Message, out.statuses())
	}
	if got, _ := m.file("/etc/lexfix/tool.conf"); got != string(conf) {
		t.Fatalf("tool.conf is %q", got)
	}
	r = m.run(job{Module: mod, Manifest: man, Params: mustJSON(t, map[string]any{"items": []string{"package:lexfix-tool"}}), Bounds: packageBounds})
	if out := decodeOut(t, r); out.statuses() != "package:lexfix-tool=unchanged" {
		t.Fatalf("the footprint was not recorded: %s %s", r.res.Result.Code, out.statuses())
	}
}

func regexpMember(groupFile, group, user string) bool {
	for line := range strings.SplitSeq(groupFile, "\n") {
		if f := strings.Split(line, ":"); len(f) == 4 && f[0] == group {
			return slices.Contains(strings.Split(f[3], ","), user)
		}
	}
	return false
}

// TestMachineRefused: a footprint naming a user the node's policy leaves out is refused whole: no user
// is made, no file written, nothing fetched.
func TestMachineRefused(t *testing.T) {
	m := newMachine(t)
	mod, man := convergeModule(t)
	fp, blobs := webRole([]byte("x\n"), []byte("y\n"))
	fp.Users = append(fp.Users, footprint.User{Name: "intruder", State: "present"})
	r := m.run(job{Module: mod, Manifest: man, Params: applyParams(t, fp), Bounds: webBounds, Blobs: blobs,
		Units: map[string]string{"web.service": unitStopped}})
	res := r.res.Result
	if res.Outcome != wasm.Failed || res.Code != errcode.FootprintRefused || !strings.Contains(res.Message, "user:intruder") {
		t.Fatalf("%s %s %s", res.Outcome, res.Code, res.Message)
	}
	if passwd, _ := m.file("/etc/passwd"); strings.Contains(passwd, "\nweb:") || strings.Contains(passwd, "intruder") {
		t.Fatal("a refused footprint made users")
	}
	if _, ok := m.file("/etc/web/web.conf"); ok || len(r.res.Served) != 0 {
		t.Fatal("a refused footprint wrote or fetched")
	}
	if strings.Contains(m.inNS("nft", "list", "ruleset"), "lexicon") {
		t.Fatal("a refused footprint applied the firewall")
	}
}

// TestMachineKill kills a converge at each step (after an artifact is staged, half way through writing
// a file, after the rename, before the unit's restart) and starts another: the file is at every moment
// the old or the new one, never torn; the next converge finishes the work, fetching nothing again and
// restarting the unit the killed one owed, though the file it restarts for is then unchanged; and no
// temporary file is left.
func TestMachineKill(t *testing.T) {
	mod, man := convergeModule(t)
	v1 := bytes.Repeat([]byte("listen 80; # first\n"), 64<<10) // over a megabyte: written in several chunks
	v2 := bytes.Repeat([]byte("listen 81; # second\n"), 64<<10)
	fileOf := func(b []byte) footprint.File {
		return footprint.File{Path: "/etc/web/web.conf", SHA256: cas.Sum(b), Size: int64(len(b)), Mode: "0644", Owner: "root", Group: "root"}
	}
	fpOf := func(b []byte) *footprint.Footprint {
		return &footprint.Footprint{Schema: footprint.SchemaName, Files: []footprint.File{fileOf(b)},
			Units: []footprint.Unit{{Name: "web.service", Enabled: true, Started: true, Files: []string{"/etc/web/web.conf"}}}}
	}
	blobs := map[string][]byte{cas.Sum(v1): v1, cas.Sum(v2): v2}
	for _, step := range []string{"artifact.staged", "fs.install.half", "fs.install.renamed", "systemd.before_restart"} {
		t.Run(step, func(t *testing.T) {
			m := newMachine(t)
			base := job{Module: mod, Manifest: man, Bounds: webBounds, Blobs: blobs}
			first := base
			first.Params, first.Units = applyParams(t, fpOf(v1)), map[string]string{"web.service": unitStopped}
			if out := decodeOut(t, m.run(first)); out.Result != "converged" {
				t.Fatalf("first converge: %s", out.statuses())
			}

			killed := base
			killed.Params, killed.Units, killed.Fault = applyParams(t, fpOf(v2)), map[string]string{"web.service": unitRunning}, step
			r := m.run(killed)
			if r.died != step {
				t.Fatalf("the converge did not die at %s:\n%s", step, r.output.String())
			}
			conf, _ := m.file("/etc/web/web.conf")
			switch {
			case conf != string(v1) && conf != string(v2):
				t.Fatalf("killed at %s, the file is torn: %d bytes, neither version", step, len(conf))
			case step == "fs.install.half" && conf != string(v1):
				t.Fatal("killed mid-write, the file is already the new one")
			case step == "fs.install.half":
				// The half-written bytes are in the temporary file beside it, never in the file.
				tmps, _ := filepath.Glob(filepath.Join(m.upper, "etc/web/.lexicon-*.new"))
				if len(tmps) != 1 {
					t.Fatalf("no temporary file mid-write: %v", tmps)
				}
				if fi, _ := os.Stat(tmps[0]); fi.Size() == 0 || fi.Size() >= int64(len(v2)) {
					t.Fatalf("the temporary file holds %d bytes: not half way", fi.Size())
				}
			case step == "fs.install.renamed" || step == "systemd.before_restart":
				if conf != string(v2) {
					t.Fatal("killed after the rename, the file is not the new one")
				}
			}

			next := base
			next.Params, next.Units = applyParams(t, fpOf(v2)), map[string]string{"web.service": unitRunning}
			r = m.run(next)
			out := decodeOut(t, r)
			if r.res.Result.Outcome != wasm.Completed || out.Result != "converged" {
				t.Fatalf("the next converge: %s %s: %s", r.res.Result.Code, r.res.Result.Message, out.statuses())
			}
			if conf, _ := m.file("/etc/web/web.conf"); conf != string(v2) {
				t.Fatal("the next converge did not finish the file")
			}
			if len(r.res.Served) != 0 || out.Fetched != 0 {
				t.Fatalf("the next converge fetched again what the killed one staged: %v", r.res.Served)
			}
			if !slices.Contains(r.res.Actions, "restart web.service") {
				t.Fatalf("the restart the killed converge owed was not done: %v (%s)", r.res.Actions, out.statuses())
			}
			if len(out.Pending) != 0 {
				t.Fatalf("actions still owed: %s", out.Pending)
			}
			if tmps, _ := filepath.Glob(filepath.Join(m.upper, "etc/web/.lexicon-*")); len(tmps) != 0 {
				t.Fatalf("temporary files left: %v", tmps)
			}
		})
	}
}
