package e2e_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// The drivers these tests publish, built once: the outside author's example (examples/driver-memory),
// the RFC 2136 driver, and host/goplugin's misbehaving DNS driver (a zone named crash.test. makes it
// panic mid-call with the credential in its panic message).
var driverBuilds = []struct{ name, pkg, manifest string }{
	{"dns-memory", "./examples/driver-memory", "examples/driver-memory/manifest.json"},
	{"dns-rfc2136", "./plugins/dns/rfc2136", "plugins/dns/rfc2136/manifest.json"},
	{"dns-crashy", "./host/goplugin/internal/testdriver/dns", ""},
	{"cloud-netns", "./plugins/cloud/netns", "plugins/cloud/netns/manifest.json"},
}

const crashyManifest = `{"schema": "lexicon/manifest/v1", "name": "crashy", "kind": "driver", "version": "1.0.0", "class": "dns",
  "summary": "Misbehaves on purpose (end-to-end tests).", "platforms": ["linux/amd64"], "module": {"file": "lexicon-driver-dns-crashy"}}`

var buildDrivers = sync.OnceValue(func() error {
	for _, b := range driverBuilds {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(bin, "lexicon-driver-"+b.name), b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return nil
})

// stageDrivers adds driver module folders to the fleet's modules.
func (f *fleet) stageDrivers(names ...string) {
	t := f.t
	must(t, buildDrivers())
	for _, n := range names {
		for _, b := range driverBuilds {
			if b.name != n {
				continue
			}
			m := []byte(crashyManifest)
			if b.manifest != "" {
				var err error
				m, err = os.ReadFile(filepath.Join(root, b.manifest))
				must(t, err)
			}
			stage(t, f.modules, "driver-"+n, m, filepath.Join(bin, "lexicon-driver-"+n), "lexicon-driver-"+n)
		}
	}
}

// publishRelease signs the fleet's modules as release seq and publishes it.
func (f *fleet) publishRelease(seq int) {
	out := filepath.Join(f.dir, fmt.Sprintf("release-%d", seq))
	run(f.t, false, "lexicon-release", "build", "--key", f.keyFile, "--modules", f.modules, "--release", fmt.Sprintf("1.%d.0", seq),
		"--sequence", fmt.Sprint(seq), "--out", out)
	f.lexicon(false, "releases", "publish", out)
}

// cli runs lexicon against the fleet's plane with -o json, records stdout and stderr, and fails the
// test unless it exits with status want.
func (f *fleet) cli(tr *testkit.Buffer, want int, args ...string) map[string]any {
	f.t.Helper()
	out, stderr, code := f.cliRaw(tr, append(args, "-o", "json")...)
	if code != want {
		f.t.Fatalf("lexicon %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		f.t.Fatalf("lexicon %v: not JSON: %v\n%s", args, err, out)
	}
	return m
}

// cliRaw runs lexicon and returns its stdout, stderr and exit status, recording both outputs.
func (f *fleet) cliRaw(tr *testkit.Buffer, args ...string) (string, string, int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "lexicon"), append(args, "--plane", f.url, "--ca", f.ca, "--token-file", f.tokenFile)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	fmt.Fprintf(tr, "%s\n%s\n", stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

func errCode(m map[string]any) string {
	c, _ := m["code"].(string)
	return c
}

// writeSecret writes a credential file, mode 0600.
func writeSecret(t testing.TB, dir, secret string) string {
	p := filepath.Join(dir, "credential")
	must(t, os.WriteFile(p, []byte(secret+"\n"), 0o600))
	return p
}

func writeJSON(t testing.TB, path string, v any) string {
	data, err := json.Marshal(v)
	must(t, err)
	must(t, os.WriteFile(path, data, 0o644))
	return path
}

func newCredential(t *testing.T) string {
	b := make([]byte, 24)
	_, err := rand.Read(b)
	must(t, err)
	return "e2e-secret-" + base64.RawURLEncoding.EncodeToString(b)
}

// driverStatus finds one driver in `lexicon drivers status`.
func driverStatus(f *fleet, tr *testkit.Buffer, name string) map[string]any {
	for _, d := range f.cli(tr, 0, "drivers", "status")["drivers"].([]any) {
		if d.(map[string]any)["name"] == name {
			return d.(map[string]any)
		}
	}
	return map[string]any{}
}

func pidAlive(pid float64, name string) bool {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", int(pid)))
	return err == nil && strings.HasPrefix(string(cmd), "lexicon-driver-"+name)
}

// TestDriverOnThePlane follows an outside author's driver from a signed release to calls through the
// plane: published, refused until enabled, enabled, given an account whose credential comes from a
// file, reconciled, disabled, and started again by a restarted plane. No log line and no output of any
// command may hold the credential.
func TestDriverOnThePlane(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{})
		tr := &testkit.Buffer{}
		secret := newCredential(t)
		f.stageDrivers("dns-memory")
		f.publishRelease(2)

		list := f.cli(tr, 0, "drivers", "list")
		ds := list["drivers"].([]any)
		if len(ds) != 1 || ds[0].(map[string]any)["name"] != "dns-memory" || ds[0].(map[string]any)["enabled"] != false || list["sequence"] != float64(2) {
			t.Fatalf("drivers list: %v", list)
		}
		if got := f.cli(tr, 1, "drivers", "enable", "dns-rfc2136"); errCode(got) != "driver.not_pinned" {
			t.Fatalf("enable of a driver the release does not pin: %v", got)
		}
		cred := writeSecret(t, f.dir, secret)
		settings := writeJSON(t, filepath.Join(f.dir, "settings.json"), map[string]any{"zones": []string{"example.com"}})
		add := []string{"accounts", "add", "--driver", "dns-memory", "--name", "lab", "--credential-file", cred, "--settings-file", settings}
		if got := f.cli(tr, 1, add...); errCode(got) != "driver.disabled" {
			t.Fatalf("account of a disabled driver: %v", got)
		}

		on := f.cli(tr, 0, "drivers", "enable", "dns-memory")
		if on["enabled"] != true || on["changed_by"] != "e2e-admin" {
			t.Fatalf("enable: %v", on)
		}
		st := driverStatus(f, tr, "dns-memory")
		if st["state"] != "running" || !pidAlive(st["pid"].(float64), "dns-memory") {
			t.Fatalf("status after enable: %v", st)
		}
		acct := f.cli(tr, 0, add...)
		if acct["name"] != "lab" || acct["driver"] != "dns-memory" {
			t.Fatalf("accounts add: %v", acct)
		}
		if got := f.cli(tr, 1, add...); errCode(got) != "account.exists" {
			t.Fatalf("account added twice: %v", got)
		}
		if l := f.cli(tr, 0, "accounts", "list")["accounts"].([]any); len(l) != 1 {
			t.Fatalf("accounts list: %v", l)
		}

		records := writeJSON(t, filepath.Join(f.dir, "records.json"), map[string]any{"records": []map[string]any{
			{"type": "A", "name": "www", "value": "192.0.2.10", "ttl": 300},
			{"type": "TXT", "name": "@", "value": "v=spf1 -all"},
		}})
		rep := f.cli(tr, 0, "dns", "reconcile", "--account", "lab", "--zone", "example.com", "--records-file", records)
		if len(rep["created"].([]any)) != 2 || len(rep["conflicts"].([]any)) != 0 {
			t.Fatalf("first reconcile: %v", rep)
		}
		// Another file wants www elsewhere: a conflict named, exit status 3, the record left alone.
		other := writeJSON(t, filepath.Join(f.dir, "other.json"), map[string]any{"records": []map[string]any{
			{"type": "A", "name": "www", "value": "192.0.2.99"},
			{"type": "A", "name": "api", "value": "192.0.2.20"},
		}})
		rep = f.cli(tr, 3, "dns", "reconcile", "--account", "lab", "--zone", "example.com", "--records-file", other)
		conflicts := rep["conflicts"].([]any)
		if len(conflicts) != 1 || len(rep["created"].([]any)) != 1 {
			t.Fatalf("conflicting reconcile: %v", rep)
		}
		existing := conflicts[0].(map[string]any)["existing"].([]any)[0].(map[string]any)
		if existing["value"] != "192.0.2.10" {
			t.Fatalf("the conflict names %v", conflicts)
		}
		text, _, code := f.cliRaw(tr, "dns", "reconcile", "--account", "lab", "--zone", "example.com", "--records-file", other, "--dry-run")
		if code != 3 || !strings.Contains(text, "! www") || !strings.Contains(text, "192.0.2.10") {
			t.Fatalf("text report (exit %d):\n%s", code, text)
		}
		recs := f.cli(tr, 0, "dns", "records", "--account", "lab", "--zone", "example.com")["records"].([]any)
		www := 0
		for _, r := range recs {
			if r.(map[string]any)["name"] == "www" {
				www++
				if r.(map[string]any)["value"] != "192.0.2.10" {
					t.Fatalf("www was changed: %v", recs)
				}
			}
		}
		if www != 1 || len(recs) != 3 {
			t.Fatalf("zone after the reconciles: %v", recs)
		}

		// Disabled: the processes stop and calls are refused.
		pid := driverStatus(f, tr, "dns-memory")["pid"].(float64)
		f.cli(tr, 0, "drivers", "disable", "dns-memory")
		if got := f.cli(tr, 1, "dns", "zones", "--account", "lab"); errCode(got) != "driver.disabled" {
			t.Fatalf("call of a disabled driver: %v", got)
		}
		if st := driverStatus(f, tr, "dns-memory"); st["state"] != "disabled" || pidAlive(pid, "dns-memory") {
			t.Fatalf("status after disable: %v (pid %v alive: %v)", st, pid, pidAlive(pid, "dns-memory"))
		}

		// Enabled state is stored: a restarted plane starts the driver without being asked.
		f.cli(tr, 0, "drivers", "enable", "dns-memory")
		first := f.plane
		first.stop()
		f.startPlane("")
		f.plane.logged(t, `"msg":"driver started"`)
		if st := driverStatus(f, tr, "dns-memory"); st["state"] != "running" || !pidAlive(st["pid"].(float64), "dns-memory") {
			t.Fatalf("the restarted plane's driver: %v", st)
		}
		if z := f.cli(tr, 0, "dns", "zones", "--account", "lab")["zones"].([]any); len(z) != 1 {
			t.Fatalf("zones after restart: %v", z)
		}

		// The audit log names who asked, the account, the operation and the outcome.
		calls := f.cli(tr, 0, "drivers", "audit", "--account", "lab")["calls"].([]any)
		seen := map[string]bool{}
		for _, c := range calls {
			c := c.(map[string]any)
			if c["actor"] != "e2e-admin" || c["driver"] != "dns-memory" {
				t.Fatalf("audit record %v", c)
			}
			seen[c["operation"].(string)+"="+c["code"].(string)] = true
		}
		for _, want := range []string{"account.add=ok", "account.add=driver.disabled", "account.add=account.exists", "dns.get_records=ok",
			"dns.append_records=ok", "dns.list_zones=driver.disabled", "dns.list_zones=ok", "driver.set_config=ok"} {
			if !seen[want] {
				t.Errorf("audit lacks %s: %v", want, seen)
			}
		}
		textAudit, _, _ := f.cliRaw(tr, "drivers", "audit")
		if !strings.Contains(textAudit, "driver.enable") {
			t.Errorf("text audit:\n%s", textAudit)
		}

		// The master key was made on first start, private.
		fi, err := os.Stat(filepath.Join(f.planeData, "master.key"))
		must(t, err)
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("master key mode %o", fi.Mode().Perm())
		}
		for name, text := range map[string]string{"first plane's log": first.log(), "plane's log": f.plane.log(), "command outputs": tr.String()} {
			if strings.Contains(text, secret) {
				t.Fatalf("the %s hold the credential", name)
			}
		}
		if !strings.Contains(tr.String(), "lab") || !strings.Contains(first.log(), "dns-memory") {
			t.Fatal("the transcript or log is empty: the search above proves nothing")
		}
	})
}

// alterStored replaces a stored artifact's bytes behind the plane's back.
func alterStored(t *testing.T, backend, url, digest string, data []byte) {
	t.Helper()
	ctx := context.Background()
	if backend == "sqlite" {
		db, err := sql.Open("sqlite", url)
		must(t, err)
		defer db.Close()
		res, err := db.ExecContext(ctx, `UPDATE artifacts SET data = ? WHERE digest = ?`, data, digest)
		must(t, err)
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("altered %d rows", n)
		}
		return
	}
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `UPDATE artifacts SET data = $1 WHERE digest = $2`, data, digest)
	must(t, err)
	if tag.RowsAffected() != 1 {
		t.Fatalf("altered %d rows", tag.RowsAffected())
	}
}

func driverDigest(t *testing.T, name string) string {
	data, err := os.ReadFile(filepath.Join(bin, "lexicon-driver-"+name))
	must(t, err)
	return cas.Sum(data)
}

// TestDriverTamperingAndCrashes: an executable altered in the plane store or in the plane's local copy
// never runs, and a driver that crashes mid-call fails that call and serves the next one.
func TestDriverTamperingAndCrashes(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{})
	tr := &testkit.Buffer{}
	secret := newCredential(t)
	f.stageDrivers("dns-memory", "dns-crashy")
	f.publishRelease(2)
	marker := filepath.Join(t.TempDir(), "it-ran")
	trap := []byte("#!/bin/sh\ntouch " + marker + "\n")

	// Altered in the plane store: refused before anything runs, and not enabled.
	alterStored(t, "sqlite", f.store, driverDigest(t, "dns-memory"), trap)
	if got := f.cli(tr, 1, "drivers", "enable", "dns-memory"); errCode(got) != "module.digest_mismatch" {
		t.Fatalf("enable of an altered driver: %v", got)
	}
	for _, d := range f.cli(tr, 0, "drivers", "list")["drivers"].([]any) {
		if d.(map[string]any)["enabled"] == true {
			t.Fatalf("an altered driver was enabled: %v", d)
		}
	}

	// Altered in the local copy under the plane's data folder: go-plugin's hash refuses it before exec.
	f.cli(tr, 0, "drivers", "enable", "dns-crashy")
	f.cli(tr, 0, "drivers", "disable", "dns-crashy")
	local := filepath.Join(f.planeData, "drivers", "sha256", driverDigest(t, "dns-crashy"))
	must(t, os.WriteFile(local, trap, 0o755))
	if got := f.cli(tr, 1, "drivers", "enable", "dns-crashy"); errCode(got) != "module.digest_mismatch" {
		t.Fatalf("enable of an altered local copy: %v", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an altered driver executable ran")
	}
	f.cli(tr, 0, "drivers", "enable", "dns-crashy") // the altered copy was dropped; the store's verifies

	// A crash mid-call is an error; the driver is restarted and the next call succeeds.
	cred := writeSecret(t, f.dir, secret)
	settings := writeJSON(t, filepath.Join(f.dir, "settings.json"), map[string]any{"zones": []string{"example.com", "crash.test"}})
	f.cli(tr, 0, "accounts", "add", "--driver", "dns-crashy", "--name", "flaky", "--credential-file", cred, "--settings-file", settings)
	f.cli(tr, 0, "dns", "zones", "--account", "flaky")
	if got := f.cli(tr, 1, "dns", "records", "--account", "flaky", "--zone", "crash.test"); errCode(got) != "driver.crashed" {
		t.Fatalf("call that crashes the driver: %v", got)
	}
	if z := f.cli(tr, 0, "dns", "zones", "--account", "flaky")["zones"].([]any); len(z) != 2 {
		t.Fatalf("zones after the restart: %v", z)
	}
	acc := driverStatus(f, tr, "dns-crashy")["accounts"].([]any)
	if len(acc) != 1 || acc[0].(map[string]any)["restarts"] != float64(1) {
		t.Fatalf("status after the crash: %v", acc)
	}
	// The panic, credential and all, reached the plane's log scrubbed.
	f.plane.logged(t, "lost its mind holding credential [REDACTED]")
	if strings.Contains(f.plane.log(), secret) || strings.Contains(tr.String(), secret) {
		t.Fatal("the credential leaked into the plane's log or a command's output")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an altered driver executable ran")
	}
}
