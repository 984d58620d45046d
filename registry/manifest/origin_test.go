package manifest_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

var (
	debianSecurity = capv1.Origin{Origin: "Debian", Label: "Debian-Security", Suite: "bookworm-security", Codename: "bookworm-security", Component: "main", Site: "security.debian.org"}
	debianUpdates  = capv1.Origin{Origin: "Debian", Label: "Debian", Suite: "bookworm-updates", Codename: "bookworm-updates", Component: "main", Site: "deb.debian.org"}
	ubuntuSecurity = capv1.Origin{Origin: "Ubuntu", Label: "Ubuntu", Suite: "jammy-security", Codename: "jammy", Component: "main"}
)

func TestOriginPattern(t *testing.T) {
	cases := []struct {
		pattern string
		o       capv1.Origin
		want    bool
	}{
		{"origin=Debian,label=Debian-Security", debianSecurity, true},
		{"origin=Debian,label=Debian-Security", debianUpdates, false},
		{"suite=*-security", ubuntuSecurity, true},
		{"suite=*-security", debianUpdates, false},
		{"origin=Debian,site=security.debian.org", debianSecurity, true},
		{"origin=Debian,site=security.debian.org", capv1.Origin{Origin: "Debian", Label: "Debian-Security", Site: "10.213.0.1"}, false},
		{"origin=Ubuntu,suite=*-security", ubuntuSecurity, true},
		{"label=Debian-Security", capv1.Origin{}, false},
	}
	for _, c := range cases {
		p, err := manifest.ParseOriginPattern(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := p.Match(c.o); got != c.want {
			t.Errorf("%s matches %+v: %v", c.pattern, c.o, got)
		}
	}
	for _, bad := range []string{"", "Debian", "origin=", "os=Debian", "origin=Debian,origin=Ubuntu", "origin=[", "label=a b", strings.Repeat("a", 600)} {
		if _, err := manifest.ParseOriginPattern(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestPackagePatterns(t *testing.T) {
	for p, ok := range map[string]bool{"*": true, "lib*": true, "openssh-server": true, "libstdc++6": true, "linux-image-[0-9]*": true,
		"": false, "Nginx": false, "a/b": false, "a b": false, "[": false} {
		if manifest.ValidPackagePattern(p) != ok {
			t.Errorf("%q: %v", p, !ok)
		}
	}
	if !manifest.MatchAnyPackage([]string{"lib*", "nginx"}, "liblexfix1") || manifest.MatchAnyPackage([]string{"lib*"}, "openssl") {
		t.Error("MatchAnyPackage")
	}
}

// The node's policy narrows; nil lists leave the manifest's bounds, empty ones allow nothing.
func TestNodePackages(t *testing.T) {
	var none *manifest.NodePackages
	if !none.AllowsOperation(capv1.CapPkgUpgrade) || !none.AllowsOrigin(debianUpdates) || !none.AllowsName("x") {
		t.Error("no policy narrows")
	}
	p := &manifest.NodePackages{Operations: []string{"query", "restarts"}, Origins: []string{"origin=Debian,label=Debian-Security"}, Names: []string{"lib*"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !p.AllowsOperation(capv1.CapPkgQuery) || p.AllowsOperation(capv1.CapPkgUpgrade) {
		t.Error("operations")
	}
	if !p.AllowsOrigin(debianSecurity) || p.AllowsOrigin(debianUpdates) || !p.AllowsName("libc6") || p.AllowsName("openssl") {
		t.Error("origins or names")
	}
	empty := &manifest.NodePackages{Operations: []string{}, Origins: []string{}}
	if empty.AllowsOperation(capv1.CapPkgQuery) || empty.AllowsOrigin(debianSecurity) || !empty.AllowsName("x") {
		t.Error("empty lists")
	}
	for _, bad := range []manifest.NodePackages{{Operations: []string{"remove"}}, {Origins: []string{"o=Debian"}}, {Names: []string{"A*"}}} {
		if err := bad.Validate(); errcode.Code(err) != errcode.ManifestInvalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

const pkgWord = `{
  "schema": "lexicon/manifest/v1", "name": "patch", "kind": "word", "version": "1.0.0", "class": "change",
  "summary": "patch", "params": {"type": "object", "additionalProperties": false}, "output": {"type": "object"}, "module": {"file": "patch.wasm"},
  "capabilities": [
    {"cap": "pkg.query"}, {"cap": "pkg.restarts"}, {"cap": "pkg.refresh", "timeout_ms": 600000}, {"cap": "pkg.repair"},
    {"cap": "pkg.upgrade", "origins": ["origin=Debian,label=Debian-Security"], "packages": ["*"]}
  ]
}`

func TestPackageCapabilities(t *testing.T) {
	mustParse(t, pkgWord)
	cases := []struct{ name, from, to, field string }{
		{"upgrade without origins", `"origins": ["origin=Debian,label=Debian-Security"], `, ``, "capabilities[4].origins"},
		{"upgrade without packages", `, "packages": ["*"]`, ``, "capabilities[4].packages"},
		{"bad origin", `"origin=Debian,label=Debian-Security"`, `"o=Debian"`, "capabilities[4].origins[0]"},
		{"bad package", `"packages": ["*"]`, `"packages": ["Nginx"]`, "capabilities[4].packages[0]"},
		{"origins on query", `{"cap": "pkg.query"}`, `{"cap": "pkg.query", "origins": ["suite=*"]}`, "capabilities[0].origins"},
		{"upgrade in a look word", `"class": "change"`, `"class": "look"`, "capabilities[2].cap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(pkgWord, c.from, c.to, 1)
			if src == pkgWord {
				t.Fatalf("%q did not apply", c.from)
			}
			_, err := manifest.Parse([]byte(src))
			if errcode.Code(err) != errcode.ManifestInvalid || errcode.From(err, "").Details[errcode.DetailField] != c.field {
				t.Fatalf("%v (%v)", err, errcode.From(err, "").Details)
			}
		})
	}
}

func FuzzOriginPattern(f *testing.F) {
	f.Add("origin=Debian,label=Debian-Security", "Debian", "Debian-Security", "bookworm-security")
	f.Fuzz(func(t *testing.T, pattern, origin, label, suite string) {
		p, err := manifest.ParseOriginPattern(pattern)
		o := capv1.Origin{Origin: origin, Label: label, Suite: suite}
		if err != nil {
			if p.Match(o) || manifest.MatchAnyOrigin([]string{pattern}, o) {
				t.Fatalf("%q does not parse yet matches", pattern)
			}
			return
		}
		if p.String() != pattern {
			t.Fatalf("%q prints as %q", pattern, p.String())
		}
		_ = p.Match(o)
	})
}
