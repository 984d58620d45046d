package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func word(class manifest.Class) *manifest.Manifest {
	return &manifest.Manifest{Name: "w", Kind: manifest.KindWord, Class: class}
}

func write(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), policy.FileName)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAcceptAndRefuseByClass(t *testing.T) {
	p := policy.Load(write(t, `{"classes": {"look": "accept", "change": "refuse"}, "names": ["www.example.test"]}`, 0o644))
	if err := p.Check(word(manifest.ClassLook)); err != nil {
		t.Fatalf("look: %v", err)
	}
	for _, c := range []manifest.Class{manifest.ClassChange, manifest.ClassDestructive} {
		if err := p.Check(word(c)); errcode.Code(err) != errcode.PolicyRefused {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if len(p.Names) != 1 || p.Names[0] != "www.example.test" {
		t.Fatalf("names: %v", p.Names)
	}
}

// TestFailsClosed: any policy the node cannot trust makes it accept nothing, and say why.
func TestFailsClosed(t *testing.T) {
	cases := map[string]string{
		"missing":           filepath.Join(t.TempDir(), "policy.json"),
		"others can write":  write(t, `{"classes": {"look": "accept"}}`, 0o666),
		"group can write":   write(t, `{"classes": {"look": "accept"}}`, 0o664),
		"not JSON":          write(t, `{"classes": `, 0o644),
		"unknown field":     write(t, `{"classes": {"look": "accept"}, "allow_all": true}`, 0o644),
		"unknown class":     write(t, `{"classes": {"root": "accept"}}`, 0o644),
		"unknown decision":  write(t, `{"classes": {"look": "maybe"}}`, 0o644),
		"repeated decision": write(t, `{"classes": {"look": "refuse", "look": "accept"}}`, 0o644),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			p := policy.Load(path)
			if errcode.Code(p.Problem()) != errcode.PolicyUntrusted {
				t.Fatalf("problem = %v", p.Problem())
			}
			if err := p.Check(word(manifest.ClassLook)); errcode.Code(err) != errcode.PolicyUntrusted {
				t.Fatalf("a look word under an untrusted policy: %v", err)
			}
		})
	}
}

// TestRenewal: the renewal program is pinned by path and sha256; a policy whose renewal is not a pinned
// program accepts nothing, as any other invalid policy.
func TestRenewal(t *testing.T) {
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	p := policy.Load(write(t, `{"classes": {"change": "accept"}, "renewal": {"path": "/usr/bin/certbot", "sha256": "`+sum+`", "args": ["renew", "--quiet"]}}`, 0o644))
	if p.Problem() != nil || p.Renewal == nil || p.Renewal.Path != "/usr/bin/certbot" || len(p.Renewal.Args) != 2 {
		t.Fatalf("%v %+v", p.Problem(), p.Renewal)
	}
	if p := policy.Load(write(t, `{"classes": {"look": "accept"}}`, 0o644)); p.Renewal != nil {
		t.Fatalf("renewal without one: %+v", p.Renewal)
	}
	for name, renewal := range map[string]string{
		"relative path":  `{"path": "certbot", "sha256": "` + sum + `"}`,
		"unclean path":   `{"path": "/usr/bin/../bin/certbot", "sha256": "` + sum + `"}`,
		"no digest":      `{"path": "/usr/bin/certbot"}`,
		"short digest":   `{"path": "/usr/bin/certbot", "sha256": "0123"}`,
		"unknown member": `{"path": "/usr/bin/certbot", "sha256": "` + sum + `", "shell": true}`,
	} {
		p := policy.Load(write(t, `{"classes": {"look": "accept"}, "renewal": `+renewal+`}`, 0o644))
		if err := p.Check(word(manifest.ClassLook)); errcode.Code(err) != errcode.PolicyUntrusted {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestConverge: the converge section is what the footprint capabilities may touch; without one they
// may touch nothing, and a section that is not valid makes the whole policy untrusted.
func TestConverge(t *testing.T) {
	p := policy.Load(write(t, `{"classes": {"change": "accept"}, "converge": {"paths": ["/etc/nginx"], "units": ["nginx*.service"], "firewall": true, "max_file_bytes": 4096}}`, 0o644))
	b, err := p.ConvergeBounds()
	if err != nil || len(b.Paths) != 1 || !b.Firewall || b.MaxFileBytes != 4096 || b.Units[0] != "nginx*.service" {
		t.Fatalf("%v %+v", err, b)
	}
	b, err = policy.Load(write(t, `{"classes": {"change": "accept"}}`, 0o644)).ConvergeBounds()
	if err != nil || len(b.Paths)+len(b.Units)+len(b.Users)+len(b.Groups)+len(b.Sysctl)+len(b.Packages) != 0 || b.Firewall {
		t.Fatalf("no section must allow nothing: %v %+v", err, b)
	}
	for name, section := range map[string]string{
		"relative root":  `{"paths": ["etc"]}`,
		"bad pattern":    `{"units": ["["]}`,
		"unknown member": `{"paths": ["/etc"], "shell": true}`,
		"negative size":  `{"max_file_bytes": -1}`,
	} {
		p := policy.Load(write(t, `{"classes": {"change": "accept"}, "converge": `+section+`}`, 0o644))
		if _, err := p.ConvergeBounds(); errcode.Code(err) != errcode.PolicyUntrusted {
			t.Errorf("%s: %v", name, err)
		}
		if err := p.Check(word(manifest.ClassLook)); errcode.Code(err) != errcode.PolicyUntrusted {
			t.Errorf("%s: the policy still accepts words: %v", name, err)
		}
	}
	// A policy others can write bounds nothing: it cannot be trusted at all.
	if _, err := policy.Load(write(t, `{"classes": {"change": "accept"}, "converge": {"paths": ["/"]}}`, 0o666)).ConvergeBounds(); errcode.Code(err) != errcode.PolicyUntrusted {
		t.Fatal(err)
	}
}

// TestBackupSection: the backup section is read with the policy, and one that names a relative folder
// or a database name pg_dump would read as settings makes the node accept nothing.
func TestBackupSection(t *testing.T) {
	p := policy.Load(write(t, `{"classes": {"change": "accept"}, "backup": {"paths": ["/srv/app"], "databases": ["app"],
		"postgres": {"bin": "/usr/lib/postgresql/15/bin", "host": "127.0.0.1", "user": "postgres"}}}`, 0o644))
	if p.Problem() != nil || p.Backup == nil || !p.Backup.AllowsPath("/srv/app/x") || !p.Backup.AllowsDatabase("app") {
		t.Fatalf("%v %+v", p.Problem(), p.Backup)
	}
	for name, body := range map[string]string{
		"a relative folder":           `{"classes": {"change": "accept"}, "backup": {"paths": ["srv/app"]}}`,
		"a database read as settings": `{"classes": {"change": "accept"}, "backup": {"databases": ["host=evil"], "postgres": {"bin": "/usr/bin"}}}`,
		"an unknown backup field":     `{"classes": {"change": "accept"}, "backup": {"buckets": ["x"]}}`,
	} {
		p := policy.Load(write(t, body, 0o644))
		if err := p.Check(word(manifest.ClassChange)); errcode.Code(err) != errcode.PolicyUntrusted {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPackages(t *testing.T) {
	p := policy.Load(write(t, `{"classes": {"change": "accept"}, "packages": {"operations": ["query", "upgrade"], "origins": ["origin=Debian,label=Debian-Security"]}}`, 0o644))
	if err := p.Problem(); err != nil {
		t.Fatal(err)
	}
	if p.Packages == nil || !p.Packages.AllowsOperation("pkg.upgrade") || p.Packages.AllowsOperation("pkg.repair") || p.Packages.Names != nil {
		t.Fatalf("%+v", p.Packages)
	}
	if p := policy.Load(write(t, `{"classes": {"change": "accept"}}`, 0o644)); p.Packages != nil {
		t.Fatalf("no packages key narrows: %+v", p.Packages)
	}
	for _, bad := range []string{`{"packages": {"operations": ["purge"]}}`, `{"packages": {"origins": ["Debian"]}}`, `{"packages": {"names": ["Bad"]}}`, `{"packages": {"hold": []}}`} {
		p := policy.Load(write(t, bad, 0o644))
		if errcode.Code(p.Problem()) != errcode.PolicyUntrusted || p.Check(word(manifest.ClassLook)) == nil {
			t.Errorf("%s: %v", bad, p.Problem())
		}
	}
}
