// Command backup_restore restores this node's backup, the last run of the job's grant with its chain
// applied in order: files into an empty or new folder (all of the tree under its full paths, or with
// path the contents of one folder of it), or a database's dump into a database that does not exist
// yet. Nothing changes unless all of it restores: files are staged and checked against their digests
// before they are moved into place, and a database is restored in one transaction and dropped again if
// that fails. Where a restore may write is the node policy's to say (backup.path_refused).
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Into         string `json:"into,omitempty"`
	Path         string `json:"path,omitempty"`
	Database     string `json:"database,omitempty"`
	IntoDatabase string `json:"into_database,omitempty"`
}

func main() {
	word.Run(func(p params) (word.BackupRestored, error) {
		r, err := word.Backup().Restore(word.BackupRestore{Into: p.Into, Path: p.Path, Database: p.Database, IntoDatabase: p.IntoDatabase})
		if err != nil {
			return word.BackupRestored{}, err
		}
		if p.Database != "" {
			word.Log("run %s: database %s restored into %s (%d bytes of dump)", r.Run, r.Database, r.IntoDatabase, r.DumpBytes)
		} else {
			word.Log("run %s: %d files (%d bytes) restored into %s", r.Run, r.Files, r.Bytes, p.Into)
		}
		return r, nil
	})
}
