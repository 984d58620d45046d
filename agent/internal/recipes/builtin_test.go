package recipes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm/wasmtest"
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
	base := wasmtest.SafeDir(t)
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
	base := wasmtest.SafeDir(t)
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
