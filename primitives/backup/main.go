// Command backup makes one backup run of this node to the target of the job's grant: the folders and
// PostgreSQL databases the params name, full or incremental. The host walks, dumps, encrypts (to the
// fleet's recovery key and this node's own) and uploads; this word says what goes in and in which
// order, and commits last, so that a run missing anything it was asked for is never a restore point.
// What may be backed up at all is the node policy's to say: a folder or database outside it fails the
// run with backup.path_refused or backup.database_refused.
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Mode      string   `json:"mode,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	Databases []string `json:"databases,omitempty"`
}

type output struct {
	Run       string            `json:"run"`
	Kind      string            `json:"kind"`
	Chain     []string          `json:"chain"`
	Reason    string            `json:"reason,omitempty"`
	Manifest  string            `json:"manifest"`
	Objects   int               `json:"objects"`
	Bytes     int64             `json:"bytes"`
	Files     *word.BackupFiles `json:"files,omitempty"`
	Databases []word.BackupDump `json:"databases"`
	Note      string            `json:"note,omitempty"`
}

func main() {
	word.Run(func(p params) (output, error) {
		b := word.Backup()
		run, err := b.Begin(p.Mode)
		if err != nil {
			return output{}, err
		}
		word.Log("run %s: %s", run.Run, run.Kind)
		if run.Reason != "" {
			word.Log("full rather than incremental: %s", run.Reason)
		}
		out := output{Run: run.Run, Kind: run.Kind, Chain: run.Chain, Reason: run.Reason, Databases: []word.BackupDump{}}
		if len(p.Paths) > 0 {
			files, err := b.Paths(p.Paths...)
			if err != nil {
				return output{}, err
			}
			word.Log("files: %d (%d bytes), %d stored (%d bytes)", files.Files, files.Bytes, files.Stored, files.StoredBytes)
			out.Files = &files
		}
		for _, db := range p.Databases {
			d, err := b.Database(db)
			if err != nil {
				return output{}, err
			}
			word.Log("database %s: %d bytes", db, d.Bytes)
			out.Databases = append(out.Databases, d)
		}
		c, err := b.Commit()
		if err != nil {
			return output{}, err
		}
		word.Log("committed: %d objects, %d bytes", c.Objects, c.Bytes)
		out.Manifest, out.Objects, out.Bytes, out.Note = c.Manifest, c.Objects, c.Bytes, c.Note
		return out, nil
	})
}
