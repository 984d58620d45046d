package recipes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// The built-in recipes' repairs, run by the loop on the host paths they may touch, each moved into a
// temporary root the capability host accepts.

const day = 24 * time.Hour

// aged writes a file of 4 KiB whose modification time is age ago.
func aged(t *testing.T, p string, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func files(t *testing.T, base string) []string {
	var out []string
	filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(base, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// diskNode is a node whose disk_headroom always fails (it wants a PiB free) and whose free_disk may
// act on base/var/log and base/var/cache/apt/archives; the check's declaration looks in logRoots.
func diskNode(base string, logRoots ...string) setup {
	logs, cache := filepath.Join(base, "var", "log"), filepath.Join(base, "var", "cache", "apt", "archives")
	if logRoots == nil {
		logRoots = []string{logs}
	}
	quoted := `"` + strings.Join(logRoots, `", "`) + `"`
	return setup{mods: func(*env) []vocabtest.Module {
		return []vocabtest.Module{
			recipeMod("disk_headroom", func(m *manifest.Manifest) {
				p := string(m.Params)
				p = strings.Replace(p, `"default": ["/var/log"]`, `"default": [`+quoted+`]`, 1)
				p = strings.Replace(p, `"default": "/var/cache/apt/archives"`, `"default": "`+cache+`"`, 1)
				p = strings.Replace(p, `"maximum": 1048576, "default": 5`, `"maximum": 1048576, "default": 1048576`, 1)
				m.Params = []byte(p)
			}),
			{Manifest: root + "primitives/free_disk/manifest.json", File: root + "build/wasm/free_disk.wasm",
				Edit: func(m *manifest.Manifest) {
					for i := range m.Capabilities {
						if m.Capabilities[i].Paths != nil {
							m.Capabilities[i].Paths = []string{logs, cache}
						}
					}
				}},
		}
	}}
}

// TestDiskHeadroomRepair: two failing ticks, then free_disk removes the old rotated logs and packages
// and vacuums the journal, and leaves the live logs, the young rotation and everything outside.
func TestDiskHeadroomRepair(t *testing.T) {
	base := testkit.SafeDir(t)
	for p, age := range map[string]time.Duration{
		"var/log/syslog.1": 3 * day, "var/log/nginx/access.log.2.gz": 3 * day,
		"var/cache/apt/archives/nginx_1.24.0_amd64.deb": 3 * day,
		"var/log/syslog": 3 * day, "var/log/auth.log.1": time.Hour, "home/alice/thesis.gz": 30 * day,
	} {
		aged(t, filepath.Join(base, p), age)
	}
	e := newEnv(t, diskNode(base))
	e.step()
	if got := files(t, base); len(got) != 6 {
		t.Fatalf("repaired after one failing tick: %v", got)
	}
	e.after(10 * time.Minute)
	e.want("disk_headroom", "0 check:fail", "10 check:fail", "10 attempt:1:repair", "10 outcome:1:repaired")
	want := []string{"home/alice/thesis.gz", "var/log/auth.log.1", "var/log/syslog"}
	if got := files(t, base); !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	if got := strings.Join(e.sd.Actions(), ";"); got != "vacuum-size 268435456" {
		t.Fatalf("journal: %q", got)
	}
	evs := e.ledger("disk_headroom")
	if p := string(evs[2].Params); evs[2].Word != "free_disk" || !strings.Contains(p, filepath.Join(base, "var", "log")) {
		t.Fatalf("attempt %+v", evs[2])
	}
	// The disk is still short (nothing frees a PiB): the next attempt waits its 10 minutes.
	e.after(10 * time.Minute)
	e.want("disk_headroom", "0 check:fail", "10 check:fail", "10 attempt:1:repair", "10 outcome:1:repaired",
		"20 check:fail", "20 attempt:2:repair", "20 outcome:2:repaired")
}

// TestDiskHeadroomContainment: a declaration naming a folder the repair word was not given (a user's
// home) reaches nothing there; with no journald and nothing of its own to remove, the attempt fails
// with free_disk.nothing_freed and every file stays.
func TestDiskHeadroomContainment(t *testing.T) {
	base := testkit.SafeDir(t)
	home := filepath.Join(base, "home", "alice")
	aged(t, filepath.Join(home, "thesis.gz"), 30*day)
	aged(t, filepath.Join(home, "notes.1"), 30*day)
	aged(t, filepath.Join(base, "var", "log", "syslog.1"), time.Hour) // too young
	e := newEnv(t, diskNode(base, home, filepath.Join(base, "var", "log")))
	e.sd.unknown.Store(true)
	e.step()
	e.after(10 * time.Minute)
	e.want("disk_headroom", "0 check:fail", "10 check:fail", "10 attempt:1:repair", "10 outcome:1:failed:free_disk.nothing_freed")
	want := []string{"home/alice/notes.1", "home/alice/thesis.gz", "var/log/syslog.1"}
	if got := files(t, base); !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// supervisionNode is a node running the agent binary the release pins, with agent_supervision declaring
// declDir as the unit folder, its repair word's roots at unitDir, and a service manager whose
// daemon-reload reads unitDir.
func supervisionNode(t *testing.T, declDir, unitDir, show string) *env {
	agent := filepath.Join(t.TempDir(), "lexicon-agent")
	if err := os.WriteFile(agent, []byte("the agent this release pins"), 0o755); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	if show != "" {
		units["lexicon-agent.service"] = show
	}
	e := newEnv(t, setup{
		units:  units,
		agents: map[string]string{runtime.GOOS + "/" + runtime.GOARCH: agent},
		digest: sha(agent),
		mods: func(*env) []vocabtest.Module {
			return []vocabtest.Module{
				recipeMod("agent_supervision", func(m *manifest.Manifest) {
					m.Params = []byte(strings.Replace(string(m.Params), `"/etc/systemd/system"`, `"`+declDir+`"`, 1))
				}),
				{Manifest: root + "primitives/restore_agent_unit/manifest.json", File: root + "build/wasm/restore_agent_unit.wasm",
					Edit: func(m *manifest.Manifest) {
						for i := range m.Capabilities {
							if m.Capabilities[i].Paths != nil {
								m.Capabilities[i].Paths = []string{unitDir}
							}
						}
					}},
			}
		},
	})
	e.sd.UnitDir = unitDir
	return e
}

// TestAgentSupervisionRepair: the agent's unit edited to stop restarts and disabled is put back from
// the release's copy and enabled, after two failing ticks; the next tick passes.
func TestAgentSupervisionRepair(t *testing.T) {
	unitDir := filepath.Join(testkit.SafeDir(t), "etc", "systemd", "system")
	path := filepath.Join(unitDir, "lexicon-agent.service")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[Service]\nExecStart=/usr/local/bin/lexicon-agent run\nRestart=no\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	neighbour := filepath.Join(unitDir, "nginx.service")
	if err := os.WriteFile(neighbour, []byte("[Service]\nExecStart=/usr/sbin/nginx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := supervisionNode(t, unitDir, unitDir, running+"UnitFileState=disabled\nRestart=no\n")
	e.step()
	e.after(time.Hour)
	e.want("agent_supervision", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:repaired")
	got, _ := os.ReadFile(path)
	want, _ := os.ReadFile(root + "agent/cmd/lexicon-agent/lexicon-agent.service")
	if len(want) == 0 || string(got) != string(want) {
		t.Fatalf("unit file now:\n%s", got)
	}
	if b, _ := os.ReadFile(neighbour); !strings.Contains(string(b), "nginx") {
		t.Fatal("another unit's file was touched")
	}
	if a := strings.Join(e.sd.Actions(), ";"); a != "daemon-reload;enable lexicon-agent.service" {
		t.Fatalf("actions %q", a)
	}
	e.after(time.Hour)
	e.want("agent_supervision", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:repaired", "120 check:pass")
}

// TestAgentSupervisionRemoved: a removed unit is written back.
func TestAgentSupervisionRemoved(t *testing.T) {
	unitDir := filepath.Join(testkit.SafeDir(t), "etc", "systemd", "system")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e := supervisionNode(t, unitDir, unitDir, "")
	e.step()
	e.after(time.Hour)
	e.after(time.Hour)
	e.want("agent_supervision", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:repaired", "120 check:pass")
	if _, err := os.Stat(filepath.Join(unitDir, "lexicon-agent.service")); err != nil {
		t.Fatal(err)
	}
}

// TestAgentSupervisionContainment: a declaration naming a unit folder the repair word was not given (a
// user's own systemd folder) gets nothing written there: the attempt fails with capability.denied.
func TestAgentSupervisionContainment(t *testing.T) {
	base := testkit.SafeDir(t)
	unitDir := filepath.Join(base, "etc", "systemd", "system")
	other := filepath.Join(base, "home", "alice", ".config", "systemd", "user")
	for _, d := range []string{unitDir, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := supervisionNode(t, other, unitDir, "")
	e.step()
	e.after(time.Hour)
	e.want("agent_supervision", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:failed:capability.denied")
	for _, d := range []string{unitDir, other} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Fatalf("%s: %v", d, entries)
		}
	}
	if len(e.sd.Actions()) != 0 {
		t.Fatalf("actions %v", e.sd.Actions())
	}
}

// certSite serves TLS on loopback: a certificate 3 days from expiry until renewed exists, a 90-day one
// after, as a renewal program that rewrote the site's certificate would leave it.
func certSite(t *testing.T, renewed string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert := func(days int) tls.Certificate {
		leaf := &x509.Certificate{SerialNumber: big.NewInt(int64(days)), Subject: pkix.Name{CommonName: "www.example.test"},
			NotBefore: time.Now().Add(-day), NotAfter: time.Now().Add(time.Duration(days)*day + time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		der, err := x509.CreateCertificate(rand.Reader, leaf, leaf, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	old, fresh := cert(3), cert(90)
	// A listener of our own: httptest would add its own certificate, which tls prefers to
	// GetCertificate when the client sends no server name (an IP address).
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if _, err := os.Stat(renewed); err == nil {
			return &fresh, nil
		}
		return &old, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// certNode is a node serving site, with cert_expiry and renew_cert, whose policy is pol plus its names.
func certNode(t *testing.T, site, renewal string) *env {
	pol := `{"classes": {"look": "accept", "change": "accept"}, "names": ["` + site + `"]` + renewal + `}`
	return newEnv(t, setup{policy: pol, mods: func(*env) []vocabtest.Module {
		return []vocabtest.Module{recipeMod("cert_expiry", nil), wordMod("renew_cert")}
	}})
}

// TestCertExpiryNotConfigured: where the node's policy names no renewal program, cert_expiry only
// checks, escalates on its second failing tick as a recipe without a repair does, and the report and
// the case say the repair is not configured.
func TestCertExpiryNotConfigured(t *testing.T) {
	site := certSite(t, filepath.Join(t.TempDir(), "renewed"))
	e := certNode(t, site, "")
	e.step()
	e.after(time.Hour)
	e.want("cert_expiry", "0 check:fail", "60 check:fail", "60 escalation:1")
	rep := e.report("cert_expiry")
	if !strings.Contains(rep.recipe.Detail, "3 days left") || !strings.Contains(rep.recipe.Detail, "repair not configured") {
		t.Fatalf("report %+v", rep.recipe)
	}
	if len(rep.cases) != 1 || !strings.Contains(rep.cases[0].Summary, "repair not configured") {
		t.Fatalf("cases %+v", rep.cases)
	}
	if body := rep.cases[0].Body; body == nil || body.Mode != ModeCheckOnly {
		t.Fatalf("case body %+v", body)
	}
}

// TestCertExpiryRenews: where the policy pins a renewal program, two failing ticks run it through
// renew_cert, and the next tick's check sees the renewed certificate.
func TestCertExpiryRenews(t *testing.T) {
	dir := t.TempDir()
	renewed := filepath.Join(dir, "renewed")
	site := certSite(t, renewed)
	script := "#!/bin/sh\n[ \"$1\" = renew ] && touch " + renewed + "\n"
	prog := filepath.Join(dir, "renew.sh")
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	e := certNode(t, site, `, "renewal": {"path": "`+prog+`", "sha256": "`+hex.EncodeToString(sum[:])+`", "args": ["renew"]}`)
	e.step()
	if _, err := os.Stat(renewed); err == nil {
		t.Fatal("renewed after one failing tick")
	}
	e.after(time.Hour)
	e.want("cert_expiry", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:repaired")
	e.after(time.Hour)
	e.want("cert_expiry", "0 check:fail", "60 check:fail", "60 attempt:1:repair", "60 outcome:1:repaired", "120 check:pass")

	// A program swapped after the policy pinned it does not run: the attempt fails, denied.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+renewed+".evil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(renewed)
	e.after(time.Hour)
	e.after(time.Hour)
	evs := e.timeline("cert_expiry")
	if last := evs[len(evs)-1]; last != "240 outcome:1:failed:capability.denied" {
		t.Fatalf("timeline %v", evs)
	}
	if _, err := os.Stat(renewed + ".evil"); err == nil {
		t.Fatal("the swapped program ran")
	}
}
