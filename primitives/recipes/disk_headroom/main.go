// Command disk_headroom is the recipe that wants room on the declared filesystem: at least min_percent
// of it and at least min_free_gib GiB available to ordinary users (df's "Avail"). Its repair, free_disk,
// removes only what the system keeps as a spare copy (rotated logs, downloaded packages, archived
// journal files); a failing verdict hands it the declared places to look. Anything else, and user
// data above all, is a person's call.
package main

import (
	"fmt"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct {
	Path       string  `json:"path"`
	MinPercent float64 `json:"min_percent"`
	MinFreeGiB float64 `json:"min_free_gib"`
	repairParams
}

// repairParams are free_disk's params, passed on from the declaration as they are.
type repairParams struct {
	LogRoots     []string `json:"log_roots,omitempty"`
	PackageCache string   `json:"package_cache,omitempty"`
	JournalBytes int64    `json:"journal_bytes,omitempty"`
}

const gib = 1 << 30

func main() {
	word.Check(func(d decl) (word.Verdict, error) {
		if d.Path == "" {
			d.Path = "/"
		}
		disk, err := word.Sys().Disk(d.Path)
		if word.IsNotFound(err) {
			return word.Unknown("%s does not exist on this machine", d.Path), nil
		}
		if err != nil {
			return word.Verdict{}, err
		}
		if disk.Total == 0 {
			return word.Unknown("%s (%s) reports no size", d.Path, disk.Mount), nil
		}
		pct := float64(disk.Available) / float64(disk.Total) * 100
		free := float64(disk.Available) / gib
		state := fmt.Sprintf("%s (%s) has %.1f GiB free (%.1f%%) of %.1f GiB", d.Path, disk.Mount, free, pct, float64(disk.Total)/gib)
		if pct < d.MinPercent || free < d.MinFreeGiB {
			return word.Failing("%s; wants at least %g%% and %g GiB", state, d.MinPercent, d.MinFreeGiB).WithRepair(d.repairParams), nil
		}
		return word.Pass("%s", state), nil
	})
}
