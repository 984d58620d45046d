package policy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// primitive parses a built-in word's signed-manifest source, as the release pins it.
func primitive(t *testing.T, name string) *manifest.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "primitives", name, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func capOf(t *testing.T, r channel.WordReach, cap string) channel.CapReach {
	t.Helper()
	for _, c := range r.Caps {
		if c.Cap == cap {
			return c
		}
	}
	t.Fatalf("%s: no %s in %+v", r.Word, cap, r.Caps)
	return channel.CapReach{}
}

const reachPolicy = `{
  "classes": {"look": "accept", "change": "accept", "destructive": "refuse"},
  "names": ["www.example.test", "example.test:8443"],
  "converge": {"paths": ["/etc/nginx", "/srv"], "units": ["nginx.service"], "users": ["web"], "groups": ["www-*"],
               "sysctl": ["net.ipv4.*"], "packages": ["nginx"]},
  "packages": {"operations": ["query", "restarts", "upgrade", "ensure"], "origins": ["origin=Debian,label=Debian-Security"], "names": ["nginx*", "openssl"]},
  "backup": {"paths": ["/srv/app"], "restore_paths": ["/srv/restore"]}
}`

// TestReachNarrowsManifests: the reach the agent reports is each real manifest's bounds as a real
// policy file narrows them, as the word host would enforce them.
func TestReachNarrowsManifests(t *testing.T) {
	p := policy.Load(write(t, reachPolicy, 0o644))
	if p.Problem() != nil {
		t.Fatal(p.Problem())
	}
	reserved := []string{"/etc/lexicon", "/var/lib/lexicon"}

	conv := p.Reach(primitive(t, "converge"), "sha-c", reserved)
	if conv.Word != "converge" || conv.Digest != "sha-c" || conv.Refused != "" {
		t.Fatalf("converge: %+v", conv)
	}
	// The manifest allows /etc, /srv, ...; the policy /etc/nginx and /srv: what both allow.
	fi := capOf(t, conv, "fs.install")
	if !fi.Narrowed || !slices.Equal(fi.Roots, []string{"/etc/nginx", "/srv"}) || !strings.Contains(fi.Note, "/var/lib/lexicon") {
		t.Fatalf("fs.install: %+v", fi)
	}
	if u := capOf(t, conv, "systemd.ensure"); !slices.Equal(u.Units, []string{"nginx.service"}) {
		t.Fatalf("systemd.ensure: %+v", u)
	}
	if a := capOf(t, conv, "account.ensure"); !slices.Equal(a.Names, []string{"web", "www-*"}) {
		t.Fatalf("account.ensure: %+v", a)
	}
	// net.* (manifest) holds net.ipv4.* (policy); vm.*, kernel.* and fs.* share no name with it.
	if s := capOf(t, conv, "sysctl.apply"); !slices.Equal(s.Names, []string{"net.ipv4.*"}) {
		t.Fatalf("sysctl.apply: %+v", s)
	}
	if n := capOf(t, conv, "nft.apply"); n.Denied == "" || !strings.Contains(n.Denied, "firewall") {
		t.Fatalf("nft.apply without converge.firewall: %+v", n)
	}
	// pkg.ensure: the manifest's *, converge's nginx, the package policy's nginx* and openssl.
	if pe := capOf(t, conv, "pkg.ensure"); !slices.Equal(pe.Packages, []string{"nginx"}) || pe.Denied != "" {
		t.Fatalf("pkg.ensure: %+v", pe)
	}
	// A capability the policy does not bound is the manifest's, untouched.
	if fd := capOf(t, conv, "fs.digest"); fd.Narrowed || len(fd.Roots) != 6 {
		t.Fatalf("fs.digest: %+v", fd)
	}

	up := p.Reach(primitive(t, "install_security_updates"), "sha-u", reserved)
	if r := capOf(t, up, "pkg.refresh"); r.Denied == "" || !strings.Contains(r.Denied, "query, restarts, upgrade, ensure") {
		t.Fatalf("pkg.refresh, not among the operations: %+v", r)
	}
	pu := capOf(t, up, "pkg.upgrade")
	if !slices.Equal(pu.Packages, []string{"nginx*", "openssl"}) || !slices.Equal(pu.Origins, []string{"origin=Debian,label=Debian-Security"}) {
		t.Fatalf("pkg.upgrade: %+v", pu)
	}

	probe := p.Reach(primitive(t, "http_probe"), "sha-h", reserved)
	if h := capOf(t, probe, "net.http"); !slices.Equal(h.Hosts, []string{"www.example.test", "example.test:8443"}) || !h.Narrowed {
		t.Fatalf("net.http @self: %+v", h)
	}
	renew := p.Reach(primitive(t, "renew_cert"), "sha-r", reserved)
	if e := capOf(t, renew, "exec.pinned"); e.Denied == "" || len(e.Programs) != 0 {
		t.Fatalf("exec.pinned @renewal without a renewal program: %+v", e)
	}
	bk := p.Reach(primitive(t, "backup"), "sha-b", reserved)
	if b := capOf(t, bk, "backup.paths"); !slices.Equal(b.Roots, []string{"/srv/app"}) {
		t.Fatalf("backup.paths: %+v", b)
	}
	if b := capOf(t, bk, "backup.database"); b.Denied == "" {
		t.Fatalf("backup.database without databases: %+v", b)
	}
	// A class the policy refuses: the word runs not at all, and the reach says why.
	restore := p.Reach(primitive(t, "backup_restore"), "sha-x", reserved)
	if !strings.Contains(restore.Refused, "destructive") {
		t.Fatalf("backup_restore: %+v", restore)
	}
	if b := capOf(t, restore, "backup.restore"); !slices.Equal(b.Roots, []string{"/srv/restore"}) {
		t.Fatalf("backup.restore: %+v", b)
	}
}

// TestReachWithoutSections: a policy with no converge, packages or backup section leaves the
// footprint and backup capabilities nothing and the package operations the manifest's; an untrusted
// policy refuses every word and narrows nothing it cannot read.
func TestReachWithoutSections(t *testing.T) {
	p := policy.Load(write(t, `{"classes": {"look": "accept", "change": "accept"}}`, 0o644))
	conv := p.Reach(primitive(t, "converge"), "d", nil)
	for _, c := range []string{"fs.install", "systemd.ensure", "account.ensure", "sysctl.apply", "nft.apply", "pkg.ensure"} {
		if r := capOf(t, conv, c); r.Denied == "" || !strings.Contains(r.Denied, "converge") {
			t.Fatalf("%s without converge: %+v", c, r)
		}
	}
	up := p.Reach(primitive(t, "install_security_updates"), "d", nil)
	if pu := capOf(t, up, "pkg.upgrade"); pu.Denied != "" || pu.Narrowed || !slices.Equal(pu.Packages, []string{"*"}) {
		t.Fatalf("pkg.upgrade with no packages section: %+v", pu)
	}
	if b := capOf(t, p.Reach(primitive(t, "backup"), "d", nil), "backup.begin"); !strings.Contains(b.Denied, "backup section") {
		t.Fatalf("backup.begin: %+v", b)
	}
	if h := capOf(t, p.Reach(primitive(t, "cert_expiry"), "d", nil), "tls.peer"); h.Denied == "" || len(h.Hosts) != 0 {
		t.Fatalf("tls.peer @self without names: %+v", h)
	}

	bad := policy.Load(write(t, `{"classes": {"look": "accept"}}`, 0o666))
	r := bad.Reach(primitive(t, "file_head"), "d", nil)
	if !strings.Contains(r.Refused, "cannot be trusted") || capOf(t, r, "fs.read").Narrowed {
		t.Fatalf("untrusted policy: %+v", r)
	}
}
