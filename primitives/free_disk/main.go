// Command free_disk is disk_headroom's repair: it frees space by removing only what the system keeps as
// a spare copy and can do without. Rotated logs (syslog.1, access.log.3.gz) a day old beneath the log
// roots, downloaded packages (*.deb) a day old in the package manager's cache, and archived journal
// files beyond a size. Live logs, folders, links and anything else are never asked for; the manifest's
// fs.remove bounds (roots, name patterns, minimum age) are what the host enforces, whatever this code
// asks. It fails with free_disk.nothing_freed when it could free nothing at all.
package main

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

type params struct {
	LogRoots     []string `json:"log_roots"`
	PackageCache string   `json:"package_cache"`
	JournalBytes int64    `json:"journal_bytes"`
}

type output struct {
	Removed    int    `json:"removed"`
	FreedBytes int64  `json:"freed_bytes"`
	Skipped    int    `json:"skipped,omitempty"`
	More       bool   `json:"more,omitempty"`
	Journal    string `json:"journal"`
}

const (
	defaultLogRoot = "/var/log"
	defaultCache   = "/var/cache/apt/archives"
	defaultJournal = 256 << 20
	// minAge matches the manifest's min_age_s: younger files are not asked for, since the host would
	// refuse them (a file rotated an hour ago may still be read by the tool that rotated it).
	minAge = 24 * time.Hour
	// maxDepth bounds how far beneath a log root the walk goes (/var/log/nginx/old/x.gz is depth 2).
	maxDepth = 3
	// maxCalls keeps the walk and its removals under the host's 1000 calls per invocation, with room
	// for the journal; what is left is for the next attempt (More).
	maxCalls = 900
)

// rotated are the names a rotated or compressed log has, the same as the manifest's fs.remove patterns
// less *.deb, which only the package cache holds.
var rotated = []string{"*.gz", "*.xz", "*.bz2", "*.zst", "*.old", "*.[0-9]", "*.[0-9][0-9]", "*.[0-9].log"}

type run struct {
	out   output
	calls int
	now   time.Time
}

func matches(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// sweep removes the old files matching patterns in dir, and beneath it to depth more folders.
func (r *run) sweep(dir string, patterns []string, depth int) {
	if r.calls >= maxCalls {
		r.out.More = true
		return
	}
	r.calls++
	l, err := word.FS().List(dir, 0)
	if err != nil {
		if !word.IsNotFound(err) {
			word.Log("list %s: %v", dir, err)
			r.out.Skipped++
		}
		return
	}
	r.out.More = r.out.More || l.Truncated
	for _, e := range l.Entries {
		p := strings.TrimSuffix(dir, "/") + "/" + e.Name
		switch {
		case e.Type == capv1.TypeDir && depth > 0:
			r.sweep(p, patterns, depth-1)
		case e.Type != capv1.TypeFile || !matches(patterns, e.Name):
		case r.now.Sub(e.ModTime) < minAge:
			r.out.Skipped++
		case r.calls >= maxCalls:
			r.out.More = true
			return
		default:
			r.calls++
			got, err := word.FS().Remove(p)
			if err != nil {
				word.Log("remove %s: %v", p, err)
				r.out.Skipped++
				continue
			}
			r.out.Removed++
			r.out.FreedBytes += got.Allocated
		}
	}
}

func main() {
	word.Run(func(p params) (output, error) {
		if p.LogRoots == nil {
			p.LogRoots = []string{defaultLogRoot}
		}
		if p.PackageCache == "" {
			p.PackageCache = defaultCache
		}
		if p.JournalBytes == 0 {
			p.JournalBytes = defaultJournal
		}
		r := &run{now: time.Now()}
		for _, root := range p.LogRoots {
			r.sweep(root, rotated, maxDepth)
		}
		r.sweep(p.PackageCache, []string{"*.deb"}, 0)
		vacuumed := false
		switch err := word.VacuumJournal(p.JournalBytes); {
		case err == nil:
			vacuumed = true
			r.out.Journal = fmt.Sprintf("archived journal files vacuumed to %d bytes", p.JournalBytes)
		case word.IsUnknown(err):
			r.out.Journal = "no journald on this machine"
		default:
			r.out.Journal = "vacuum failed: " + word.Code(err)
			word.Log("journal.vacuum: %v", err)
		}
		if r.out.Removed == 0 && !vacuumed {
			return output{}, word.Fail("free_disk.nothing_freed", "nothing was safe to remove (%d files skipped; journal: %s)",
				r.out.Skipped, r.out.Journal).With("skipped", r.out.Skipped)
		}
		return r.out, nil
	})
}
