package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/free_disk.wasm"

type freed struct {
	Removed    int    `json:"removed"`
	FreedBytes int64  `json:"freed_bytes"`
	Skipped    int    `json:"skipped"`
	Journal    string `json:"journal"`
}

// node is a temporary root holding the host paths the word may touch (var/log, var/cache/apt/archives)
// and one it may not (home), with the manifest's roots pointed there.
type node struct {
	base, log, cache string
}

func newNode(t *testing.T) node {
	base := wordtest.WritableDir(t)
	return node{base: base, log: filepath.Join(base, "var", "log"), cache: filepath.Join(base, "var", "cache", "apt", "archives")}
}

func (n node) load(t *testing.T, opts ...wordtest.Option) *wordtest.Word {
	opts = append(opts, wordtest.Paths("fs.list", n.log, n.cache), wordtest.Paths("fs.remove", n.log, n.cache))
	return wordtest.Load(t, wasmFile, "manifest.json", opts...)
}

func (n node) params() map[string]any {
	return map[string]any{"log_roots": []string{n.log}, "package_cache": n.cache}
}

func write(t *testing.T, p string, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 8192)), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// left lists the files under base, relative to it.
func left(t *testing.T, base string) []string {
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

// TestFrees: on the host's own paths, the word removes the rotated logs and downloaded packages a day
// old, vacuums the journal, and leaves live logs, young rotations and everything else.
func TestFrees(t *testing.T) {
	n := newNode(t)
	const day = 24 * time.Hour
	for _, p := range []string{"syslog.1", "syslog.2.gz", "nginx/access.log.3.gz", "nginx/error.log.12", "apt/history.log.1.gz", "dpkg.log.1.log"} {
		write(t, filepath.Join(n.log, p), 3*day)
	}
	write(t, filepath.Join(n.cache, "nginx_1.24.0_amd64.deb"), 2*day)
	// Kept: live logs, a rotation an hour old, a package downloaded now, the cache's lock, user data.
	for p, age := range map[string]time.Duration{
		"var/log/syslog": 3 * day, "var/log/auth.log.1": time.Hour, "var/log/nginx/access.log": 3 * day,
		"var/cache/apt/archives/lock": 3 * day, "var/cache/apt/archives/new_1.0_amd64.deb": time.Minute,
		"home/alice/thesis.gz": 3 * day, "var/lib/postgresql/base.1": 3 * day,
	} {
		write(t, filepath.Join(n.base, p), age)
	}
	fake := wordtest.NewFakeSystemd(nil)
	w := n.load(t, wordtest.WithSystemd(fake))
	var out freed
	w.Must(n.params(), &out)
	if out.Removed != 7 || out.FreedBytes < 7*8192 || out.Skipped != 2 || !strings.Contains(out.Journal, "268435456") {
		t.Fatalf("%+v", out)
	}
	want := []string{"home/alice/thesis.gz", "var/cache/apt/archives/lock", "var/cache/apt/archives/new_1.0_amd64.deb",
		"var/lib/postgresql/base.1", "var/log/auth.log.1", "var/log/nginx/access.log", "var/log/syslog"}
	if got := left(t, n.base); !slices.Equal(got, want) {
		t.Fatalf("left %v\nwant %v", got, want)
	}
	if got := strings.Join(fake.Actions(), ";"); got != "vacuum-size 268435456" {
		t.Fatalf("journal: %q", got)
	}
}

// TestNothingToFree: with nothing old enough and no journald, the word says it freed nothing.
func TestNothingToFree(t *testing.T) {
	n := newNode(t)
	write(t, filepath.Join(n.log, "syslog.1"), time.Hour)
	w := n.load(t, wordtest.WithoutSystemd())
	res := w.Run(n.params())
	if res.Code != "free_disk.nothing_freed" || !strings.Contains(res.Message, "no journald") {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	if got := left(t, n.base); !slices.Equal(got, []string{"var/log/syslog.1"}) {
		t.Fatalf("left %v", got)
	}
}

// TestContainment: params naming folders beyond the manifest's roots reach nothing: the host refuses
// every listing and removal there, and the user's files stay.
func TestContainment(t *testing.T) {
	n := newNode(t)
	home := filepath.Join(n.base, "home", "alice")
	write(t, filepath.Join(home, "notes.1"), 30*24*time.Hour)
	write(t, filepath.Join(home, "backup.gz"), 30*24*time.Hour)
	if err := os.MkdirAll(n.log, 0o755); err != nil {
		t.Fatal(err)
	}
	// A link inside the log root leading to the user's folder is not followed out.
	if err := os.Symlink(home, filepath.Join(n.log, "alice")); err != nil {
		t.Fatal(err)
	}
	w := n.load(t, wordtest.WithoutSystemd())
	res := w.Run(map[string]any{"log_roots": []string{home, n.log, "/"}, "package_cache": filepath.Join(n.base, "home")})
	if res.Code != "free_disk.nothing_freed" {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	for _, c := range res.Capabilities {
		if c.Cap == "fs.list" && strings.Contains(string(c.Args), "home") && c.Allowed {
			t.Errorf("listing outside the roots allowed: %s", c.Args)
		}
		if c.Cap == "fs.remove" {
			t.Errorf("a removal was asked for: %s", c.Args)
		}
	}
	if got := left(t, home); !slices.Equal(got, []string{"backup.gz", "notes.1"}) {
		t.Fatalf("left %v", got)
	}
	if res := w.Run(map[string]any{"journal_bytes": 1024}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("a journal size under the floor: %s", res.Code)
	}
}
