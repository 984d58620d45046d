package caps

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// pkgWord is a change word declaring every pkg.* capability, upgrading from Debian's security
// archive any package matching packages.
func pkgWord(t *testing.T, env *Env, packages ...string) *Word {
	t.Helper()
	if len(packages) == 0 {
		packages = []string{"*"}
	}
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": "patch", "kind": "word", "version": "1.0.0", "class": "change",
		"summary": "patch", "params": json.RawMessage(`{"type":"object","additionalProperties":false}`),
		"output": json.RawMessage(`{"type":"object"}`), "module": map[string]any{"file": "p.wasm"},
		"capabilities": []map[string]any{
			{"cap": "pkg.query", "max_bytes": 4096}, {"cap": "pkg.restarts"}, {"cap": "pkg.refresh"}, {"cap": "pkg.repair"},
			{"cap": "pkg.upgrade", "origins": []string{"origin=Debian,label=Debian-Security"}, "packages": packages},
		},
	}
	b, _ := json.Marshal(doc)
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Prepare(m, env)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// call sends one request and returns the response, decoding a result into out.
func pkgCall(t *testing.T, w *Word, req string, out any) (*errcode.Body, []Call) {
	t.Helper()
	d := w.Invocation()
	var r capv1.Response
	if err := json.Unmarshal(d.Call(context.Background(), []byte(req)), &r); err != nil {
		t.Fatal(err)
	}
	if r.Error == nil && out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatal(err)
		}
	}
	return r.Error, d.Calls()
}

func wantRefusal(t *testing.T, e *errcode.Body, calls []Call, code, reason string) {
	t.Helper()
	if e == nil || e.Code != code {
		t.Fatalf("got %+v, want %s", e, code)
	}
	if reason != "" && e.Details[errcode.DetailReason] != reason {
		t.Fatalf("reason %v, want %s (%s)", e.Details[errcode.DetailReason], reason, e.Message)
	}
	if len(calls) != 1 || calls[0].Allowed {
		t.Fatalf("the refusal is recorded as %+v", calls)
	}
}

// The upgrade takes the security fix; everything refused is refused before apt runs, with its code.
func TestPkgUpgradeBounds(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	apt := &pkgmgr.Apt{Root: r.Dir}
	w := pkgWord(t, &Env{Packages: apt}, "liblexfix*", "lexfix-*")

	// Not installed, held, outside the patterns, no security version: each refused, nothing run.
	e, calls := pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["lexfix-broken"]}`, nil)
	if e == nil || e.Code != errcode.PkgNotInstalled || e.Details[errcode.DetailPackage] != apttest.Broken {
		t.Fatalf("%+v", e)
	}
	if e, _ := pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["lexfix-held"]}`, nil); e == nil || e.Code != errcode.PkgHeld {
		t.Fatalf("held: %+v", e)
	}
	e, calls = pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["coreutils"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgNameRefused, "manifest")
	e, calls = pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["lexfix-tool"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgOriginRefused, "manifest")
	if e.Details[errcode.DetailVersion] != "1.1" || e.Details[errcode.DetailOrigin] == "" {
		t.Fatalf("%+v", e.Details)
	}
	if e, _ := pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["Bad Name"]}`, nil); e == nil || e.Code != errcode.CapabilityInvalid {
		t.Fatalf("bad name: %+v", e)
	}
	for _, p := range []string{apttest.Lib, apttest.Tool} {
		if v := r.Version(t, p); v != "1.0 installed" {
			t.Fatalf("%s is %q after refusals", p, v)
		}
	}

	var res capv1.UpgradeResult
	e, calls = pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["liblexfix1","lexfix-daemon"]}`, &res)
	if e != nil || !calls[0].Allowed {
		t.Fatalf("%+v", e)
	}
	if len(res.Changed) != 1 || res.Changed[0].Name != apttest.Lib || res.Changed[0].To != "1.1" || len(res.Unchanged) != 1 || res.Unchanged[0] != apttest.Daemon {
		t.Fatalf("%+v", res)
	}
}

// The node's policy narrows: an origin the manifest allows but the policy does not, a name outside the
// policy's patterns, an operation it does not list. Nothing changes.
func TestPkgPolicyNarrows(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	apt := &pkgmgr.Apt{Root: r.Dir}
	// The policy takes security fixes only from Debian's own security host; the fixture is served
	// from elsewhere.
	pol := &manifest.NodePackages{Origins: []string{"origin=Debian,label=Debian-Security,site=security.debian.org"}, Names: []string{"lib*"}}
	w := pkgWord(t, &Env{Packages: apt, PackagePolicy: pol})
	e, calls := pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["liblexfix1"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgOriginRefused, "policy")
	e, calls = pkgCall(t, w, `{"cap":"pkg.upgrade","packages":["lexfix-daemon"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgNameRefused, "policy")

	lookOnly := pkgWord(t, &Env{Packages: apt, PackagePolicy: &manifest.NodePackages{Operations: []string{"query", "restarts"}}})
	for _, req := range []string{`{"cap":"pkg.upgrade","packages":["liblexfix1"]}`, `{"cap":"pkg.refresh"}`, `{"cap":"pkg.repair"}`} {
		e, calls := pkgCall(t, lookOnly, req, nil)
		wantRefusal(t, e, calls, errcode.PkgOperationRefused, "")
	}
	var st capv1.PkgState
	if e, _ := pkgCall(t, lookOnly, `{"cap":"pkg.query"}`, &st); e != nil || len(st.Upgrades) != 3 {
		t.Fatalf("query: %+v %+v", e, st.Upgrades)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
}

// Every package the package manager's plan adds is checked as those named are: lexfix-plugin 1.1
// needs lexfix-extra, new, and offered only as an ordinary update. Nothing runs.
func TestPkgUpgradePlanChecked(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Plugin+"=1.0")
	apt := &pkgmgr.Apt{Root: r.Dir}
	e, calls := pkgCall(t, pkgWord(t, &Env{Packages: apt}, apttest.Plugin), `{"cap":"pkg.upgrade","packages":["lexfix-plugin"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgNameRefused, "manifest")
	if e.Details[errcode.DetailPackage] != apttest.Extra {
		t.Fatalf("%+v", e)
	}
	e, calls = pkgCall(t, pkgWord(t, &Env{Packages: apt}, "lexfix-*"), `{"cap":"pkg.upgrade","packages":["lexfix-plugin"]}`, nil)
	wantRefusal(t, e, calls, errcode.PkgOriginRefused, "manifest")
	if e.Details[errcode.DetailPackage] != apttest.Extra || e.Details[errcode.DetailVersion] != "1.0" {
		t.Fatalf("%+v", e)
	}
	if v, x := r.Version(t, apttest.Plugin), r.Version(t, apttest.Extra); v != "1.0 installed" || x != "" {
		t.Fatalf("plugin %q, extra %q", v, x)
	}
}

// The installed list is cut at the declared max_bytes, and says so.
func TestPkgQueryCapped(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	w := pkgWord(t, &Env{Packages: &pkgmgr.Apt{Root: r.Dir}})
	var st capv1.PkgState
	if e, _ := pkgCall(t, w, `{"cap":"pkg.query","installed":true}`, &st); e != nil {
		t.Fatal(e)
	}
	b, _ := json.Marshal(st)
	if !st.InstalledTruncated || len(st.Installed) == 0 || len(st.Installed) >= st.InstalledCount || len(b) > 4096 {
		t.Fatalf("%d of %d listed, %d bytes, truncated %v", len(st.Installed), st.InstalledCount, len(b), st.InstalledTruncated)
	}
}

// Without a package manager every pkg.* call is capability.unknown.
func TestPkgUnknown(t *testing.T) {
	t.Parallel()
	w := pkgWord(t, &Env{})
	for _, req := range []string{`{"cap":"pkg.query"}`, `{"cap":"pkg.restarts"}`, `{"cap":"pkg.refresh"}`, `{"cap":"pkg.repair"}`, `{"cap":"pkg.upgrade","packages":["ab"]}`} {
		if e, _ := pkgCall(t, w, req, nil); e == nil || e.Code != errcode.CapabilityUnknown {
			t.Errorf("%s: %+v", req, e)
		}
	}
}
